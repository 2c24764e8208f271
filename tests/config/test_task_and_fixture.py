"""task.toml (dataset.md §2.2), the §2.3 task validation, and buzz-fixture.toml (orchestrator.md §6)."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest

from orchestra.config.errors import ConfigError
from orchestra.config.fixture import Fixture, load_fixture
from orchestra.config.task import load_task, task_digest

from .conftest import make_task


def task_problems(task_dir: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_task(task_dir)
    lines = [str(err) for err in caught.value.errors]
    assert all("\n" not in line for line in lines)
    return lines


def test_valid_task_loads_with_defaults(tmp_path: Path) -> None:
    """Without a buzz-fixture.toml the task is a Harbor task: the empty fixture, no evidence
    required, its layer and name from its task.toml."""
    task = load_task(make_task(tmp_path, "reply-to-thread", "workflow", fixture=None))
    assert task.is_harbor
    assert task.name == "buzz-native/reply-to-thread"
    assert task.short_name == "reply-to-thread"
    assert task.layer == "workflow"
    assert task.toml.agent.timeout_sec == 300.0 and task.toml.verifier.timeout_sec == 30.0
    assert task.toml.environment.network_mode == "public"
    assert task.instruction() == "Do the thing."
    assert task.fixture == Fixture.empty() and task.fixture.requires_evidence is False


def test_missing_layer_message_is_the_specified_one(tmp_path: Path) -> None:
    task = make_task(tmp_path, "foo", None)
    assert task_problems(task) == [
        f'{task}/task.toml: [metadata].evaluation_layer must be "regression" or "workflow" (missing)'
    ]


def test_wrong_layer_and_missing_name(tmp_path: Path) -> None:
    task = make_task(tmp_path, "foo", "nightly", skip=("name",))
    assert task_problems(task) == [
        f"{task}/task.toml: [task].name must be a non-empty string (missing)",
        f'{task}/task.toml: [metadata].evaluation_layer must be "regression" or "workflow" (got "nightly")',
    ]


def test_missing_files_are_reported_together(tmp_path: Path) -> None:
    task = make_task(tmp_path, "foo", skip=("instruction", "environment", "tests"))
    assert task_problems(task) == [
        f"{task}/instruction.md: missing (every task needs this file)",
        f"{task}/environment: missing (every task needs this directory)",
        f"{task}/tests/test.sh: missing (every task needs this file)",
    ]


@pytest.mark.parametrize(
    ("append", "expected"),
    [
        (
            "\n[task]\nfoo = 1\n",
            "invalid TOML: Cannot declare ('task',) twice (at line 15, column 6)",
        ),
        ("\n[bogus]\nx = 1\n", "bogus: unknown key"),
        (
            '\n[environment]\ncpus = "2"\n',
            '[environment].cpus: input should be a valid integer (got "2")',
        ),
        (
            "\n[environment]\nmemory_mb = 0\n",
            "[environment].memory_mb: input should be greater than 0 (got 0)",
        ),
    ],
)
def test_task_toml_schema_errors(tmp_path: Path, append: str, expected: str) -> None:
    task = make_task(tmp_path, "foo")
    with (task / "task.toml").open("a") as handle:
        handle.write(append)
    assert task_problems(task) == [f"{task}/task.toml: {expected}"]


def test_unknown_key_inside_a_section(tmp_path: Path) -> None:
    task = make_task(tmp_path, "foo")
    text = (task / "task.toml").read_text().replace("[agent]\n", "[agent]\nmodel = 'x'\n")
    (task / "task.toml").write_text(text)
    assert task_problems(task) == [f"{task}/task.toml: [agent].model: unknown key"]


def test_fixture_errors_are_task_errors(tmp_path: Path) -> None:
    task = make_task(tmp_path, "foo", fixture="schema_version = 2\n")
    assert task_problems(task) == [
        f"{task}/buzz-fixture.toml: schema_version: input should be 1 (got 2)"
    ]


def test_task_digest_covers_files_but_not_readme_or_bytecode(tmp_path: Path) -> None:
    task = make_task(tmp_path, "foo", fixture=None)
    expected = hashlib.sha256()
    for relative in ("environment/Dockerfile", "instruction.md", "task.toml", "tests/test.sh"):
        expected.update(relative.encode() + b"\0" + (task / relative).read_bytes() + b"\0")
    assert task_digest(task) == expected.hexdigest()
    (task / "README.md").write_text("docs")
    (task / "tests" / "__pycache__").mkdir()
    (task / "tests" / "__pycache__" / "verify.cpython-311.pyc").write_bytes(b"x")
    assert task_digest(task) == expected.hexdigest()
    (task / "tests" / "verify.py").write_text("print(1)\n")
    assert task_digest(task) != expected.hexdigest()


def test_the_tests_are_copied_with_the_digest_and_later_edits_are_noticed(
    tmp_path: Path,
) -> None:
    task = load_task(make_task(tmp_path, "foo"))
    verify_py = task.dir / "tests" / "verify.py"
    verify_py.write_text("print('pristine')\n")
    verify_py.chmod(0o640)
    digest = task.digest  # the job's plan reads it before any trial
    copied = {test.relative: (test.content, test.mode) for test in task.tests}
    assert copied == {
        "test.sh": (b"#!/bin/sh\nset -eu\n", (task.dir / "tests/test.sh").stat().st_mode & 0o777),
        "verify.py": (b"print('pristine')\n", 0o640),
    }
    assert task.tests_changed_on_disk() == []
    verify_py.write_text("print('forged')\n")  # e.g. an agent of the local env
    (task.dir / "tests" / "sitecustomize.py").write_text("")
    assert task.digest == digest
    assert dict((t.relative, t.content) for t in task.tests)["verify.py"] == b"print('pristine')\n"
    assert task.tests_changed_on_disk() == ["sitecustomize.py", "verify.py"]


# --- buzz-fixture.toml ------------------------------------------------------------------------


INTERLEAVED = """\
schema_version = 1
requires_evidence = true
user_display_name = "Nora Isabel Grant"

[[directory]]
name = "Ledger Scout"
role = "bot"
channel_member = true

[[directory]]
name = "Risk Sentinel"
role = "bot"
channel_member = true

[[scripted_messages]]
label = "ledger-report"
actor = "Ledger Scout"
content = "@{orchestrator} Ledger report for {user}: North is 17."
reply_to_task = true
mention_orchestrator = true

[[scripted_messages]]
label = "beta-request"
actor = "user"
content = "@{orchestrator} BETA request"
"""

SERIES = """\
schema_version = 1
requires_evidence = true
observe_channel_names = ["fix-pr-1234"]

[[directory_series]]
prefix = "benchmark-user-"
start = 1
end = 50
width = 2
role = "user"

[[directory_series]]
prefix = "benchmark-bot-"
start = 1
end = 10
width = 2
role = "bot"
"""

FILES = '''\
schema_version = 1
requires_evidence = true
home = "/home/buzz"

[[files]]
path = "/home/buzz/.claude/skills/context-health-check/SKILL.md"
mode = "0644"
content = """
CHECK_ID: chc-{{random_hex}} and again {{random_hex}}
"""
'''

MEMORY = """\
schema_version = 1
requires_evidence = true
user_display_name = "Amelia Rose Bennett"

[[memory_seeds]]
slug = "total-customers-per-month"
value = "We average 361,250 customers per month."
"""


def fixture_at(tmp_path: Path, text: str) -> Path:
    (tmp_path / "buzz-fixture.toml").write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


def fixture_problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_fixture(fixture_at(tmp_path, text))
    prefix = f"{tmp_path}/buzz-fixture.toml: "
    lines = [str(err) for err in caught.value.errors]
    assert all(line.startswith(prefix) and "\n" not in line for line in lines)
    return [line.removeprefix(prefix) for line in lines]


def test_directory_and_scripted_messages(tmp_path: Path) -> None:
    fixture = load_fixture(fixture_at(tmp_path, INTERLEAVED))
    assert fixture.user_display_name == "Nora Isabel Grant"
    assert [e.key for e in fixture.directory_entries()] == ["Ledger Scout", "Risk Sentinel"]
    first, second = fixture.scripted_messages
    assert first.render("solo-1", "Nora") == "@solo-1 Ledger report for Nora: North is 17."
    assert first.reply_to_task and first.mention_orchestrator
    assert not second.reply_to_task and second.mention_orchestrator  # defaults


def test_series_expand_after_directory_entries(tmp_path: Path) -> None:
    fixture = load_fixture(
        fixture_at(tmp_path, SERIES + '\n[[directory]]\nname = "Solo"\nrole = "user"\n')
    )
    entries = fixture.directory_entries()
    assert len(entries) == 61
    assert entries[0].name == "Solo"
    assert entries[1].name == entries[1].key == "benchmark-user-01"
    assert entries[50].name == "benchmark-user-50" and entries[51].name == "benchmark-bot-01"
    assert entries[-1].role == "bot" and entries[-1].channel_member is False
    assert fixture.observe_channel_names == ["fix-pr-1234"]


def test_files_and_random_hex(tmp_path: Path) -> None:
    fixture = load_fixture(fixture_at(tmp_path, FILES))
    [file] = fixture.files
    assert file.mode_bits == 0o644
    assert file.render("ab" * 16) == f"CHECK_ID: chc-{'ab' * 16} and again {'ab' * 16}\n"


def test_memory_seeds(tmp_path: Path) -> None:
    [seed] = load_fixture(fixture_at(tmp_path, MEMORY)).memory_seeds
    assert seed.slug == "total-customers-per-month"


def test_absent_fixture_is_empty_and_needs_no_evidence(tmp_path: Path) -> None:
    fixture = load_fixture(tmp_path)
    assert fixture.requires_evidence is False and fixture.directory_entries() == []


BASE = "schema_version = 1\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ["schema_version: required key is missing"]),
        (BASE + "colour = 1\n", ["colour: unknown key"]),
        (
            BASE + "requires_evidence = 1\n",
            ["requires_evidence: input should be a valid boolean (got 1)"],
        ),
        (
            BASE + "schema_version = 1\n",
            ["invalid TOML: Cannot overwrite a value (at line 2, column 19)"],
        ),
        (
            BASE + '[[directory]]\nname = "A"\nrole = "admin"\n',
            ["directory[0].role: input should be 'user' or 'bot' (got \"admin\")"],
        ),
        (
            BASE
            + '[[directory]]\nname = "A"\nrole = "bot"\n[[directory]]\nname = "A"\nrole = "user"\n',
            ['directory[1].identity_id: duplicate identity id "A" (also directory[0].identity_id)'],
        ),
        (
            BASE + '[[directory]]\nname = "p-1"\nrole = "bot"\n'
            '[[directory_series]]\nprefix = "p-"\nstart = 1\nend = 2\nwidth = 1\nrole = "user"\n',
            ['directory_series[0]: duplicate identity id "p-1" (also directory[0].identity_id)'],
        ),
        (
            BASE
            + '[[directory_series]]\nprefix = "p-"\nstart = 5\nend = 2\nwidth = 1\nrole = "user"\n',
            ["directory_series[0].end: must be >= start (5), got 2"],
        ),
        (
            BASE
            + '[[directory_series]]\nprefix = "p-"\nstart = 1\nend = 100\nwidth = 2\nrole = "user"\n',
            ["directory_series[0].width: 2 digits cannot hold end (100)"],
        ),
        (
            BASE + '[[scripted_messages]]\nlabel = "a"\nactor = "Ghost"\ncontent = "x"\n',
            ['scripted_messages[0].actor: "Ghost" is neither "user" nor a directory identity_id'],
        ),
        (
            BASE + '[[scripted_messages]]\nlabel = "a"\nactor = "user"\ncontent = "x"\n'
            '[[scripted_messages]]\nlabel = "a"\nactor = "user"\ncontent = "y"\n',
            ['scripted_messages[1].label: duplicate label "a" (also scripted_messages[0].label)'],
        ),
        (
            BASE + '[[memory_seeds]]\nslug = "Bad Slug"\nvalue = "v"\n',
            [
                "memory_seeds[0].slug: string should match pattern '^[a-z0-9][a-z0-9-]{0,127}$' "
                '(got "Bad Slug")'
            ],
        ),
        (
            BASE
            + '[[memory_seeds]]\nslug = "a"\nvalue = "v"\n[[memory_seeds]]\nslug = "a"\nvalue = "w"\n',
            ['memory_seeds[1].slug: duplicate slug "a" (also memory_seeds[0].slug)'],
        ),
        (
            BASE + '[[memory_seeds]]\nslug = "a"\nvalue = ""\n',
            ['memory_seeds[0].value: string should have at least 1 character (got "")'],
        ),
        (
            BASE + '[[files]]\npath = "/home/buzz/x"\ncontent = "c"\n',
            ["home: is required when files are declared"],
        ),
        (
            BASE + 'home = "home/buzz"\n',
            ['home: must be an absolute directory path below / (got "home/buzz")'],
        ),
        (
            BASE + 'home = "/home/buzz"\n[[files]]\npath = "/etc/x"\ncontent = "c"\n',
            ['files[0].path: must be under home (/home/buzz), got "/etc/x"'],
        ),
        (
            BASE + 'home = "/home/buzz"\n[[files]]\npath = "/home/buzz/../x"\ncontent = "c"\n',
            ['files[0].path: must be an absolute file path without .. (got "/home/buzz/../x")'],
        ),
        (
            BASE
            + 'home = "/home/buzz"\n[[files]]\npath = "/home/buzz/x"\ncontent = "c"\nmode = "755"\n'
            '[[files]]\npath = "/home/buzz/x"\ncontent = "c"\nmode = "rwx"\n',
            ['files[1].mode: must be an octal string such as "0644" (got "rwx")'],
        ),
        (
            BASE + 'home = "/home/buzz"\n[[files]]\npath = "/home/buzz/x"\ncontent = "c"\n'
            '[[files]]\npath = "/home/buzz/x"\ncontent = "d"\n',
            ["files[1].path: duplicate path (also files[0].path)"],
        ),
    ],
)
def test_fixture_errors(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert fixture_problems(tmp_path, text) == expected
