"""Helpers for end-to-end tests of the real agent tree (agent-harness.md §0.1):
buzz-acp -> buzz-agent -> buzz-dev-mcp -> bash, on a real relay, with `FakeLLM` as the model.

* `open_room(relay_url)`: a fresh channel with a trial user (`BuzzClient`) and an agent
  identity that is a member of it.
* `start_tree(room, llm_env, base_dir, **env) -> Tree`: spawns the `buzz-acp` console script
  with the real `buzz-agent` and `buzz-dev-mcp`; `HOME`, `TMPDIR` and the working directory
  all live in `base_dir`.
* `Tree`: follows the JSON-lines event log (`events`, `wait_for`, `wait_for_event`), lists the live
  process tree (`process_ids`), stops it with SIGTERM (`stop`) or kills what is left (`kill`).
* `fifo_read`, `fifo_write`: FIFO hand-shakes with shell commands, with a time limit.
* Reading a prompt the way a model would: `prompt_text(request)`, `reply_command(prompt)`.
* `read_jsonl`, `pid_alive`, `command_lines`, `parent_pid`.

`Room`, `Tree` and `pid_alive` generalise private helpers of test_acp_bridge.py and
test_oracle_e2e.py (left untouched; they could import these instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fake_llm import RecordedRequest

from orchestra.buzz import BuzzClient
from orchestra.nostr.keys import Keys
from orchestra.processes import descendants

VENV_BIN = Path(sys.executable).parent
WAIT_S = 45.0
USER_NAME = "Trial User"
AGENT_NAME = "solo-1"

Records = list[dict[str, Any]]


def read_jsonl(path: Path) -> Records:
    """Complete lines only: the writer flushes whole lines, but a reader may catch one half
    written."""
    if not path.exists():
        return []
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


@dataclass
class Room:
    """A channel on the shared relay with a trial user and an agent member."""

    relay_url: str
    user: BuzzClient
    user_keys: Keys
    agent_keys: Keys
    channel: str

    async def mention(self, content: str) -> str:
        """A kind-9 message p-tagging the agent, the way a user's client sends it."""
        result = await self.user.messages_send(
            self.channel, content, mention=[self.agent_keys.pubkey]
        )
        return str(result["event_id"])

    async def post_raw(self, content: str, tags: list[list[str]] | None = None) -> str:
        """Published verbatim (no mention resolution): `["h", channel]` plus `tags`."""
        published = await self.user.publish(9, content, [["h", self.channel], *(tags or [])])
        return str(published["event_id"])

    async def post_as_agent(self, content: str) -> str:
        """A message by the agent's own identity that p-tags the agent itself."""
        async with BuzzClient.from_keys(self.relay_url, self.agent_keys) as agent:
            tags = [["h", self.channel], ["p", self.agent_keys.pubkey]]
            return str((await agent.publish(9, content, tags))["event_id"])

    async def replies_to(self, event_id: str) -> Records:
        return await self.user.query([{"kinds": [9], "#h": [self.channel], "#e": [event_id]}])


async def open_room(relay_url: str) -> Room:
    user_keys, agent_keys = Keys.generate(), Keys.generate()
    user = BuzzClient.from_keys(relay_url, user_keys)
    await user.users_set_profile(display_name=USER_NAME)
    async with BuzzClient.from_keys(relay_url, agent_keys) as agent:
        await agent.users_set_profile(display_name=AGENT_NAME)
    channel = (await user.channels_create(f"tree-{uuid.uuid4().hex[:8]}"))["channel_id"]
    await user.channels_add_member(channel, agent_keys.pubkey, role="bot")
    return Room(relay_url, user, user_keys, agent_keys, channel)


class FollowsEventLog(Protocol):
    process: asyncio.subprocess.Process

    def events(self) -> Records: ...

    def stderr(self) -> str: ...


async def follow_event_log(
    acp: FollowsEventLog, predicate: Callable[[Records], Any], limit_s: float = WAIT_S
) -> Any:
    """Follow a buzz-acp's event log (its only readiness signal, so it is polled like
    `tail -F`) until `predicate(records)` is truthy; return that value."""
    deadline = time.monotonic() + limit_s
    while True:
        result = predicate(acp.events())
        if result:
            return result
        if acp.process.returncode is not None:
            raise AssertionError(f"buzz-acp exited early:\n{acp.stderr()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; event log: {acp.events()}\n{acp.stderr()}")
        await asyncio.sleep(0.05)


@dataclass
class Tree:
    """A running buzz-acp (and, below it, buzz-agent, buzz-dev-mcp and their shells)."""

    process: asyncio.subprocess.Process
    events_path: Path
    stderr_path: Path
    workdir: Path

    def events(self) -> Records:
        return read_jsonl(self.events_path)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    async def wait_for(self, predicate: Callable[[Records], Any], limit_s: float = WAIT_S) -> Any:
        return await follow_event_log(self, predicate, limit_s)

    async def wait_for_event(self, name: str, count: int = 1) -> Records:
        """Every record named `name`, once there are at least `count` of them."""

        def enough(records: Records) -> Records:
            found = [r for r in records if r["event"] == name]
            return found if len(found) >= count else []

        return await self.wait_for(enough)

    def process_ids(self) -> list[int]:
        """buzz-acp and every live descendant, read from /proc."""
        return [self.process.pid, *descendants(self.process.pid)]

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), 30)

    async def kill(self) -> None:
        """Teardown after a failure: SIGKILL whatever is left of the tree."""
        if self.process.returncode is None:
            for pid in reversed(self.process_ids()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            await self.process.wait()


def command_lines(pids: list[int]) -> dict[int, list[str]]:
    """argv of each pid that still exists."""
    found: dict[int, list[str]] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            found[pid] = raw.decode(errors="replace").rstrip("\0").split("\0")
    return found


def parent_pid(pid: int) -> int | None:
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        # Field 4 follows the parenthesised command name, which may contain spaces.
        return int(stat[stat.rfind(")") + 2 :].split()[1])
    return None


def _make_workdir(base_dir: Path) -> Path:
    workdir = base_dir / "work"
    workdir.mkdir(parents=True)
    return workdir


async def start_tree(room: Room, llm_env: dict[str, str], base_dir: Path, **env: str) -> Tree:
    workdir = _make_workdir(base_dir)
    events_path = base_dir / "events.jsonl"
    stderr_path = base_dir / "acp.stderr.log"
    full_env = {
        "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(base_dir),
        "TMPDIR": str(base_dir),
        "LANG": "C.UTF-8",
        "BUZZ_RELAY_URL": room.relay_url,
        "BUZZ_PRIVATE_KEY": room.agent_keys.secret_hex,
        "BUZZ_ACP_AGENT_COMMAND": str(VENV_BIN / "buzz-agent"),
        "BUZZ_ACP_AGENT_ARGS": "",
        "BUZZ_ACP_MCP_COMMAND": str(VENV_BIN / "buzz-dev-mcp"),
        "BUZZ_ACP_CHANNELS": room.channel,
        "BUZZ_ACP_NO_MEMORY": "true",
        "BUZZ_ACP_EVENT_LOG": str(events_path),
        "BUZZ_ACP_BATCH_WINDOW_MS": "200",
        "BUZZ_ACP_CWD": str(workdir),
        **llm_env,
        **env,
    }
    with stderr_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            str(VENV_BIN / "buzz-acp"),
            env=full_env,
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    return Tree(process, events_path, stderr_path, workdir)


# ---- FIFOs that shell commands of the tree wait on or report through ------------------------


async def fifo_write(fifo: Path, text: str, limit_s: float = WAIT_S) -> None:
    """Blocks until a command of the tree opens `fifo` for reading."""
    try:
        await asyncio.wait_for(asyncio.to_thread(fifo.write_text, text), limit_s)
    finally:
        # Should no reader ever come, a reader of our own frees the blocked writer thread.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))


async def fifo_read(fifo: Path, limit_s: float = WAIT_S) -> str:
    """Blocks until a command of the tree has written to `fifo` and closed it."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(fifo.read_text), limit_s)
    finally:
        # Should no writer ever come, a writer of our own frees the blocked reader thread.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))


# ---- reading the prompt like a model --------------------------------------------------------

_REPLY_INSTRUCTION = re.compile(
    r"^Reply instruction: .*?run (buzz messages send --channel \S+ --reply-to [0-9a-f]{64})",
    re.MULTILINE,
)
_FROM_HEX = re.compile(r"^From: .*\(npub: npub1\w+, hex: ([0-9a-f]{64})\)$", re.MULTILINE)


def prompt_text(request: RecordedRequest) -> str:
    """The text of the newest user message of an OpenAI chat request."""
    users = [m for m in request.body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"])


def reply_command(prompt: str) -> str:
    """`buzz messages send --channel … --reply-to … --mention <requester>` as the prompt's
    reply instruction and event block tell it (content still to be given with --content)."""
    instruction = _REPLY_INSTRUCTION.search(prompt)
    requester = _FROM_HEX.search(prompt)
    if instruction is None or requester is None:
        raise AssertionError(f"prompt lacks a reply instruction or requester:\n{prompt}")
    return f"{instruction.group(1)} --mention {requester.group(1)}"
