"""How the local env starts agent trees (orchestra.trial.env.sandbox; orchestrator.md §5.8)."""

import itertools
import sys
from pathlib import Path, PurePosixPath

import pytest

from orchestra.documents.enums import SandboxKind
from orchestra.paths import FORK_CLIENT, FORK_HOLDER, FORK_SERVER_SOCKET
from orchestra.stack.info import scripts_dir
from orchestra.trial.env import sandbox
from orchestra.trial.env.forked import fork_server
from orchestra.trial.env.programs import program_trees
from orchestra.trial.env.sandbox import (
    AgentFiles,
    HostLauncher,
    Mount,
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


def test_a_harbor_task_s_directories_are_shown_at_their_container_paths(tmp_path: Path) -> None:
    """Mounts come after the trial's own files, in order, writable or not; `offline` adds a
    network namespace (the Harbor verifier's)."""
    sandbox_dir = tmp_path / "sandbox"
    files = AgentFiles(
        writable_tree=sandbox_dir,
        cwd=PurePosixPath("/app"),
        mounts=(
            Mount(sandbox_dir / "app", PurePosixPath("/app")),
            Mount(tmp_path / "tests", PurePosixPath("/tests"), writable=False),
        ),
        offline=True,
    )
    argv = bwrap_argv("/usr/bin/bwrap", SandboxLayout((), ()), files, ["/tests/test.sh"], 3)
    pairs = list(itertools.pairwise(argv))
    assert "--unshare-net" in argv
    assert argv.index(str(sandbox_dir)) < argv.index(str(sandbox_dir / "app"))
    assert ("--bind", str(sandbox_dir / "app")) in pairs and ("/app", "--ro-bind") in pairs
    assert ("--ro-bind", str(tmp_path / "tests")) in pairs
    assert ("--chdir", "/app") in pairs
    assert "--unshare-net" not in bwrap_argv(
        "b", SandboxLayout((), ()), AgentFiles(sandbox_dir, sandbox_dir), ["x"], 3
    )


@pytest.mark.parametrize("target", ["/usr", "/usr/src/app"])
def test_a_mount_that_would_cover_or_sit_in_a_system_tree_is_refused(
    tmp_path: Path, target: str
) -> None:
    files = AgentFiles(tmp_path, tmp_path, mounts=(Mount(tmp_path, PurePosixPath(target)),))
    with pytest.raises(OSError, match=f"{target} cannot be shown in the sandbox: it overlaps /usr"):
        bwrap_argv("/usr/bin/bwrap", SandboxLayout((), ()), files, ["x"], 3)


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


def test_own_programs_start_through_the_fork_server(fresh_probe) -> None:
    """The client script is bound over buzz-agent, buzz-dev-mcp and buzz, the server's socket
    and the holder into the sandbox's /tmp, all after the program trees; the holder is then
    the sandbox's first process."""
    fresh_probe.delenv(sandbox.FORK_SERVER_VARIABLE, raising=False)
    support = SandboxSupport(SandboxKind.BWRAP, program="/usr/bin/bwrap")
    launcher = local_launcher(support, None, hidden=[])
    assert isinstance(launcher, sandbox.BwrapLauncher) and launcher.fork is fork_server()
    paths = launcher.fork.paths
    assert paths.client.read_text().startswith(f"#!{sys.executable} -SI\n")
    assert paths.holder.stat().st_mode & 0o777 == 0o755
    programs = scripts_dir()
    assert launcher.layout.overlays == (
        *((paths.client, programs / name) for name in ("buzz-agent", "buzz-dev-mcp", "buzz")),
        (paths.client, Path(FORK_CLIENT)),
        (paths.socket, Path(FORK_SERVER_SOCKET)),
        (paths.holder, Path(FORK_HOLDER)),
    )
    files = AgentFiles(writable_tree=Path("/trial/sandbox"), cwd=Path("/trial/sandbox"))
    argv = bwrap_argv("/usr/bin/bwrap", launcher.layout, files, [str(FORK_HOLDER), "5"], 7)
    triples = list(zip(argv, argv[1:], argv[2:], strict=False))
    overlays = [i for i, (_, source, _) in enumerate(triples) if source == str(paths.client)]
    assert len(overlays) == 4
    venv = triples.index(("--ro-bind", str(programs.parent), str(programs.parent)))
    assert venv < overlays[0]  # the venv first, then the files over it
    assert argv[-3:] == ["--", str(FORK_HOLDER), "5"]


@pytest.mark.parametrize("bin_dir_or_switch", ["bin dir", "switched off"])
def test_other_programs_and_the_switch_start_without_it(
    fresh_probe, tmp_path: Path, bin_dir_or_switch: str
) -> None:
    support = SandboxSupport(SandboxKind.BWRAP, program="/usr/bin/bwrap")
    bin_dir = None
    if bin_dir_or_switch == "bin dir":
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
    else:
        fresh_probe.setenv(sandbox.FORK_SERVER_VARIABLE, "0")
    launcher = local_launcher(support, bin_dir, hidden=[])
    assert isinstance(launcher, sandbox.BwrapLauncher)
    assert launcher.fork is None and launcher.layout.overlays == ()
