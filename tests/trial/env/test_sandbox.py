"""How the local env starts agent trees (orchestra.trial.env.sandbox; orchestrator.md §5.8)."""

import itertools
import sys
from pathlib import Path

import pytest

from orchestra.documents.enums import SandboxKind
from orchestra.trial.env import sandbox
from orchestra.trial.env.programs import program_trees
from orchestra.trial.env.sandbox import (
    AgentFiles,
    HostLauncher,
    SandboxLayout,
    SandboxSupport,
    bwrap_argv,
    local_launcher,
)


@pytest.fixture
def fresh_probe(monkeypatch):
    sandbox.sandbox_support.cache_clear()
    yield monkeypatch
    sandbox.sandbox_support.cache_clear()


@pytest.mark.parametrize(
    ("value", "problem"),
    [("", "ORCHESTRA_BWRAP is empty"), ("no-such-bwrap", "no-such-bwrap not found; install")],
)
def test_without_bwrap_agents_run_unsandboxed_with_one_warning_line(
    fresh_probe, value: str, problem: str
) -> None:
    fresh_probe.setenv(sandbox.BWRAP_VARIABLE, value)
    support = sandbox.sandbox_support()
    assert support.kind is SandboxKind.NONE and support.program is None
    assert support.problem is not None and support.problem.startswith(problem)
    warning = support.warning()
    assert warning.startswith("warning: local-env agents run unsandboxed (sandbox: none): ")
    assert "\n" not in warning
    assert isinstance(local_launcher(support, None, hidden=[]), HostLauncher)


def test_bwrap_that_cannot_make_namespaces_is_no_sandbox(fresh_probe, tmp_path: Path) -> None:
    refusing = tmp_path / "bwrap"
    refusing.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    refusing.chmod(0o755)
    fresh_probe.setenv(sandbox.BWRAP_VARIABLE, str(refusing))
    support = sandbox.sandbox_support()
    assert support.kind is SandboxKind.NONE
    assert support.problem is not None
    assert "cannot create namespaces here (bwrap: No permissions" in support.problem


def test_the_sandbox_file_system(tmp_path: Path) -> None:
    """System trees and program trees read-only (each once, outermost), hidden directories
    covered even inside them, then the trial's own files; the command after `--`."""
    venv = tmp_path / "venv"
    jobs_inside = venv / "jobs"  # a jobs dir placed inside a tree agents see
    (venv / "lib").mkdir(parents=True)
    jobs_inside.mkdir()
    trial = jobs_inside / "job" / "t__1"
    files = AgentFiles(
        writable_tree=trial / "sandbox",
        cwd=trial / "sandbox" / "workspace",
        read_only_files=(trial / "agent" / "buzz" / "solo-1.system-prompt.md",),
        writable_files=(trial / "agent" / "buzz" / "solo-1.events.jsonl",),
    )
    layout = SandboxLayout((venv / "lib", venv, venv), hidden=(jobs_inside, tmp_path / "state"))
    argv = bwrap_argv("/usr/bin/bwrap", layout, files, ["buzz-acp"], 7)
    pairs = list(itertools.pairwise(argv))
    assert argv[:2] == ["/usr/bin/bwrap", "--unshare-pid"] and "--as-pid-1" in argv
    assert ("--info-fd", "7") in pairs and ("--cap-drop", "ALL") in pairs
    assert ("--ro-bind", "/usr") in pairs and ("--tmpfs", "/tmp") in pairs
    assert ("--proc", "/proc") in pairs and ("--ro-bind", "/dev/null") in pairs  # /etc/shadow
    assert [b for a, b in pairs if a == "--ro-bind" and b.startswith(str(tmp_path))][:1] == [
        str(venv)
    ]
    assert argv.index(str(jobs_inside)) < argv.index(str(files.writable_tree))  # hidden first
    assert ("--tmpfs", str(tmp_path / "state")) not in pairs  # in no tree: simply absent
    assert ("--bind", str(files.writable_files[0])) in pairs
    assert ("--ro-bind", str(files.read_only_files[0])) in pairs
    assert argv[-6:] == ["--remount-ro", "/", "--chdir", str(files.cwd), "--", "buzz-acp"]


def test_a_buzz_bin_dir_brings_its_interpreter(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "buzz-acp").write_text(f"#!{sys.executable}\n")
    (bin_dir / "buzz-agent").write_text("#!/usr/bin/env sh\n")
    trees = program_trees(bin_dir, own=False, agent_path="/usr/bin:/bin")
    assert bin_dir in trees and Path(sys.prefix) in trees and Path(sys.base_prefix) in trees


def test_this_packages_scripts_bring_the_package_source() -> None:
    import orchestra

    trees = program_trees(Path(sys.prefix) / "bin", own=True, agent_path="")
    assert Path(orchestra.__path__[0]) in trees and Path(sys.base_prefix) in trees


def test_support_warning_names_the_problem() -> None:
    line = SandboxSupport(SandboxKind.NONE, problem="bwrap not found").warning()
    assert "bwrap not found" in line
