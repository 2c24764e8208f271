"""buzz-dev-mcp through the MCP SDK client, as a real stdio subprocess (agent-harness.md §3)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agent_support import BUZZ_DEV_MCP, held_mcp_client, make_fifo, read_fifo, wait_for_exit
from mcp import StdioServerParameters

BUZZ_CLI_REAL_PATH = os.path.realpath(Path(sys.executable).parent / "buzz")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@contextlib.asynccontextmanager
async def _connect(workdir: Path, env: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """A connected SDK client of buzz-dev-mcp working in `workdir`."""
    params = StdioServerParameters(
        command=BUZZ_DEV_MCP,
        args=[],
        cwd=str(workdir),
        env={"TMPDIR": str(workdir.parent), **(env or {})},
    )
    async with held_mcp_client(params) as client:
        yield client


@pytest.fixture
async def mcp(workdir: Path) -> AsyncIterator[Any]:
    async with _connect(
        workdir, {"NOSTR_PRIVATE_KEY": "nsec-should-not-leak", "BUZZ_PRIVATE_KEY": "a" * 64}
    ) as client:
        yield client


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_lists_the_tools_with_small_schemas(mcp: Any) -> None:
    tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
    assert set(tools) == {"shell", "read_file", "str_replace", "todo"}
    shell = tools["shell"]
    assert shell.input_schema["properties"]["command"]["type"] == "string"
    assert shell.input_schema["properties"]["timeout_secs"]["type"] == "integer"
    assert shell.input_schema["required"] == ["command"]
    assert shell.annotations.destructive_hint and shell.annotations.open_world_hint
    assert tools["read_file"].annotations.read_only_hint
    for tool in tools.values():
        assert len(tool.description.encode()) < 1024


async def test_shell_reports_output_and_exit_code_without_error_flag(
    mcp: Any, workdir: Path
) -> None:
    result = await mcp.call_tool("shell", {"command": "pwd; echo oops >&2; exit 7"})
    assert not result.is_error
    assert text_of(result) == f"{workdir}\noops\n[exit code: 7]"


async def test_shell_has_buzz_on_path_and_hides_nostr_key(mcp: Any) -> None:
    result = await mcp.call_tool(
        "shell",
        {
            "command": 'command -v buzz; echo "key=${NOSTR_PRIVATE_KEY:-unset}"; '
            'echo "buzzkey=${#BUZZ_PRIVATE_KEY}"; echo "pager=$PAGER"; '
            'test -L "$(command -v buzz)" && echo symlink'
        },
    )
    lines = text_of(result).splitlines()
    assert lines[0].endswith("/bin/buzz") and "buzz-dev-mcp-" in lines[0]
    assert lines[1:5] == ["key=unset", "buzzkey=64", "pager=cat", "symlink"]
    assert await asyncio.to_thread(os.path.realpath, lines[0]) == BUZZ_CLI_REAL_PATH


async def test_shell_truncates_to_the_tail_and_keeps_the_full_output(mcp: Any) -> None:
    result = await mcp.call_tool("shell", {"command": "seq 1 20000"})
    text = text_of(result)
    full = "".join(f"{n}\n" for n in range(1, 20001))
    header, rest = text.split("\n", 1)
    assert header.startswith(
        f"[output truncated: showing the last 8192 of {len(full)} bytes; full output: "
    )
    artifact = Path(header.rsplit("full output: ", 1)[1].rstrip("]"))
    assert await asyncio.to_thread(artifact.read_bytes) == full.encode()
    assert rest == full[-8192:] + "[exit code: 0]"


async def test_shell_timeout_kills_the_whole_process_tree(mcp: Any, workdir: Path) -> None:
    marker = workdir / "child.pid"
    result = await mcp.call_tool(
        "shell",
        {"command": f"sleep 300 & echo $! > {marker}; echo started; wait", "timeout_secs": 1},
    )
    assert result.is_error
    assert text_of(result) == "started\n[timed out after 1 s]"
    await wait_for_exit(int(marker.read_text()))


async def test_shell_timeout_is_clamped_to_600(mcp: Any) -> None:
    result = await mcp.call_tool("shell", {"command": "true", "timeout_secs": 100000})
    assert text_of(result) == "[exit code: 0]"


async def test_cancelled_call_kills_the_command(mcp: Any, workdir: Path) -> None:
    fifo = make_fifo(workdir / "cancel.pid")
    call = asyncio.create_task(
        mcp.call_tool("shell", {"command": f"sleep 300 & echo $! > {fifo}; wait"})
    )
    pid = int(await read_fifo(fifo))
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_for_exit(pid)


async def test_read_file_numbers_lines_and_pages(mcp: Any, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    result = await mcp.call_tool("read_file", {"path": "notes.txt", "offset": 3, "limit": 4})
    assert not result.is_error
    assert text_of(result) == (
        "3:line 3\n4:line 4\n5:line 5\n6:line 6\n[showing lines 3-6 of 10; use offset to read more]"
    )
    whole = await mcp.call_tool("read_file", {"path": str(workdir / "notes.txt")})
    assert text_of(whole).splitlines()[-1] == "10:line 10"


async def test_read_file_expands_home_and_reads_outside_the_workspace(
    workdir: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "memo.md").write_text("remember\n")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("far away\n")
    async with _connect(workdir, {"HOME": str(home)}) as client:
        assert text_of(await client.call_tool("read_file", {"path": "~/memo.md"})) == "1:remember"
        assert (
            text_of(await client.call_tool("read_file", {"path": "../elsewhere.txt"}))
            == "1:far away"
        )


async def test_read_file_errors(mcp: Any, workdir: Path) -> None:
    (workdir / "blob.bin").write_bytes(b"abc\0def")
    (workdir / "latin1.txt").write_bytes(b"caf\xe9\n")
    (workdir / "sub").mkdir()
    (workdir / "sub" / "a.txt").write_text("x")
    cases = {
        "missing.txt": "file not found: missing.txt",
        "blob.bin": "blob.bin looks like a binary file (NUL byte); not shown",
        "latin1.txt": "latin1.txt is not valid UTF-8 (byte offset 3)",
        "sub": "sub is a directory; entries: a.txt",
    }
    for path, message in cases.items():
        result = await mcp.call_tool("read_file", {"path": path})
        assert result.is_error, path
        assert text_of(result) == message


async def test_read_file_cuts_long_lines(mcp: Any, workdir: Path) -> None:
    (workdir / "wide.txt").write_text("x" * 2500 + "\n")
    text = text_of(await mcp.call_tool("read_file", {"path": "wide.txt"}))
    assert text == "1:" + "x" * 2000 + "… [line truncated]"


async def test_str_replace_one_match_returns_a_diff_and_keeps_mode(mcp: Any, workdir: Path) -> None:
    target = workdir / "script.sh"
    target.write_text("#!/bin/sh\necho old\r\nexit 0\n")
    target.chmod(0o751)
    result = await mcp.call_tool(
        "str_replace", {"path": "script.sh", "old_str": "echo old", "new_str": "echo new"}
    )
    assert not result.is_error
    assert target.read_bytes() == b"#!/bin/sh\necho new\r\nexit 0\n"  # line endings untouched
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    diff = text_of(result)
    assert diff.startswith("--- a/script.sh\n+++ b/script.sh\n")
    assert "-echo old\r\n" in diff and "+echo new\r\n" in diff
    assert sorted(os.listdir(workdir)) == ["script.sh"]  # no temporary file left


async def test_str_replace_zero_and_many_matches(mcp: Any, workdir: Path) -> None:
    target = workdir / "data.txt"
    target.write_text("a\nb\na\n")
    none = await mcp.call_tool(
        "str_replace", {"path": "data.txt", "old_str": "zzz", "new_str": "y"}
    )
    assert none.is_error and text_of(none) == "old_str not found in data.txt"
    many = await mcp.call_tool("str_replace", {"path": "data.txt", "old_str": "a", "new_str": "c"})
    assert many.is_error
    assert text_of(many) == (
        "old_str matches 2 times in data.txt; include more context or set replace_all"
    )
    assert target.read_text() == "a\nb\na\n"
    every = await mcp.call_tool(
        "str_replace", {"path": "data.txt", "old_str": "a", "new_str": "c", "replace_all": True}
    )
    assert not every.is_error and target.read_text() == "c\nb\nc\n"


async def test_str_replace_creates_a_new_file_only_with_empty_old_str(
    mcp: Any, workdir: Path
) -> None:
    created = await mcp.call_tool(
        "str_replace", {"path": "new/dir/file.md", "old_str": "", "new_str": "hello\n"}
    )
    assert not created.is_error
    assert (workdir / "new/dir/file.md").read_text() == "hello\n"
    assert "+hello" in text_of(created)
    again = await mcp.call_tool(
        "str_replace", {"path": "new/dir/file.md", "old_str": "", "new_str": "x"}
    )
    assert again.is_error
    missing = await mcp.call_tool(
        "str_replace", {"path": "nope.txt", "old_str": "a", "new_str": "b"}
    )
    assert missing.is_error and text_of(missing) == "file not found: nope.txt"


async def test_scratch_directory_is_private_and_removed_on_exit(workdir: Path) -> None:
    async with _connect(workdir) as client:
        result = await client.call_tool("shell", {"command": 'dirname "$(command -v buzz)"'})
        scratch = Path(text_of(result).splitlines()[0]).parent
        assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
        assert scratch.parent == workdir.parent  # created under TMPDIR
    assert not scratch.exists()


async def test_missing_buzz_cli_is_a_startup_error(workdir: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        BUZZ_DEV_MCP,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=workdir,
        env={"PATH": os.environ["PATH"], "BUZZ_CLI_PATH": str(workdir / "no-such-buzz")},
    )
    stdout, stderr = await process.communicate()
    assert process.returncode == 1
    assert stdout == b""
    assert b"BUZZ_CLI_PATH" in stderr and b"Traceback" not in stderr


async def test_todo_renders_a_checklist(mcp: Any) -> None:
    items = [
        {"text": "read the task", "status": "done"},
        {"text": "draft the answer", "status": "in_progress"},
        {"text": "post it"},
    ]
    result = await mcp.call_tool("todo", {"items": items})
    assert not result.is_error
    assert text_of(result) == "- [x] read the task\n- [~] draft the answer\n- [ ] post it"
    bad = await mcp.call_tool("todo", {"items": [{"text": "x", "status": "later"}]})
    assert bad.is_error
