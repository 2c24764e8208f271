"""Help that teaches: every option of every command described, examples and
exit codes on every command, `--version`, flags without a value placeholder."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer._click.core import Command  # typer >= 0.26 vendors click
from typer.core import TyperGroup as Group

from orchestra import __version__
from orchestra.cli.main import app

ORCHESTRA = str(Path(sys.executable).parent / "orchestra")


def commands(command: Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, Group):
        for name, child in command.commands.items():
            yield from commands(child, (*path, name))


ALL = list(commands(typer.main.get_command(app)))
LEAVES = [(path, command) for path, command in ALL if not isinstance(command, Group)]


def help_text(*path: str, columns: int = 100) -> str:
    run = subprocess.run(
        [ORCHESTRA, *path, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": str(columns), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_every_option_and_argument_of_every_command_is_described() -> None:
    undocumented = [
        f"{' '.join(path)} {param.name}"
        for path, command in ALL
        for param in command.params
        if not getattr(param, "help", None) and param.name != "help"
    ]
    assert undocumented == []
    assert {" ".join(path) for path, _ in LEAVES} >= {
        "benchmark", "resume", "summarize", "report", "compare", "cleanup",
        "stack up", "stack down", "stack status",
    }  # fmt: skip


@pytest.mark.parametrize("path", [path for path, _ in ALL], ids=lambda p: " ".join(p) or "root")
def test_each_command_shows_examples_and_exit_codes_and_bare_flags(path: tuple[str, ...]) -> None:
    text = help_text(*path)
    if path in (("stack",), ("export",)):  # groups: each of their commands has examples
        assert "Commands:" in text
        return
    examples = text.split("Examples:", 1)[1].split("Exit codes:", 1)
    assert 2 <= len(re.findall(r"^  orchestra ", examples[0], re.M)) <= 4
    assert re.search(r"^\s+0  ", examples[1], re.M)
    assert "<bool>" not in text and "BOOLEAN" not in text


def test_defaults_are_written_and_nothing_wraps_at_80_columns() -> None:
    text = help_text("benchmark", columns=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    for option, default in (
        ("--n-concurrent", "[default: 4;"),
        ("--manifest", "[default: manifests/buzz-native-solo-oracle.yaml]"),
        ("--attempts", "[default: per layer: regression"),
        ("--relay-port", "[default: 3600;"),
    ):
        entry = text.split(option, 1)[1].split("\n  -", 1)[0]
        assert "".join(default.split()) in "".join(entry.split()), option  # wrapped anywhere


def test_version_and_bare_orchestra() -> None:
    version = subprocess.run([ORCHESTRA, "--version"], capture_output=True, text=True, timeout=60)
    assert (version.returncode, version.stdout) == (0, f"orchestra {__version__}\n")
    bare = subprocess.run([ORCHESTRA], capture_output=True, text=True, timeout=60)
    assert bare.returncode == 0 and "Commands:" in bare.stdout and "Examples:" in bare.stdout


def test_summarize_is_described_in_words() -> None:
    assert "§" not in help_text("summarize") and "pass rates" in help_text()
