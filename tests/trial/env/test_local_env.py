"""The local sandbox: fixture files, solution placement, escaped-process sweep (§5.8, §6, §7.2)."""

import asyncio
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestra.config.fixture import Fixture
from orchestra.config.task import Task, TaskToml
from orchestra.jobs.runner import Interrupt
from orchestra.paths import TrialPaths
from orchestra.trial.env import local
from orchestra.trial.env.local import LocalAgentProcess, LocalEnvironment
from orchestra.trial.env.protocol import EnvCommandError
from orchestra.trial.env.sandbox import AgentFiles, HostLauncher
from orchestra.trial.filewatch import watch_file
from orchestra.trial.setup_phase import prepare_environment
from orchestra.trial.state import SetupState


def fixture() -> Fixture:
    return Fixture.model_validate(
        {
            "schema_version": 1,
            "home": "/home/buzz",
            "files": [
                {"path": "/home/buzz/.claude/skills/x/SKILL.md", "content": "id {{random_hex}}\n"},
                {"path": "/home/buzz/notes.txt", "content": "{{random_hex}}", "mode": "0600"},
            ],
        }
    )


def local_trial(tmp_path: Path, fixture: Fixture) -> SimpleNamespace:
    """Just what the setup phase's `prepare_environment` reads of a trial's state."""
    task_dir = tmp_path / "task"
    (task_dir / "solution").mkdir(parents=True)
    (task_dir / "solution" / "solve.sh").write_text("#!/bin/sh\n")
    task = Task(dir=task_dir, toml=TaskToml(), fixture=fixture)
    trial = TrialPaths(tmp_path / "trial")
    env = LocalEnvironment(trial, task, tmp_path / "bin", None, HostLauncher())
    return SimpleNamespace(task=task, paths=trial, env=env, setup=SetupState())


def test_fixture_files_share_one_random_value_and_are_recorded(tmp_path: Path) -> None:
    state = local_trial(tmp_path, fixture())
    trial, env = state.paths, state.env.facts.paths
    asyncio.run(prepare_environment(state, with_solution=False))
    assert Path(env.home) == trial.sandbox / "home" / "buzz"
    assert Path(env.workspace).is_dir() and Path(env.tmpdir).is_dir()
    skill = trial.sandbox / "home/buzz/.claude/skills/x/SKILL.md"
    value = (trial.sandbox / "home/buzz/notes.txt").read_text()
    assert len(value) == 32
    assert skill.read_text() == f"id {value}\n"
    assert stat.S_IMODE((trial.sandbox / "home/buzz/notes.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE(skill.parent.stat().st_mode) == 0o755
    assert trial.fixture_file_record("/home/buzz/notes.txt").read_text() == value
    assert not (trial.sandbox / "solution").exists()


def test_solution_is_copied_executable(tmp_path: Path) -> None:
    state = local_trial(tmp_path, Fixture.empty())
    asyncio.run(prepare_environment(state, with_solution=True))
    solve = state.paths.sandbox / "solution" / "solve.sh"
    assert Path(state.env.facts.paths.solve_sh) == solve
    assert os.access(solve, os.X_OK)


def test_stopping_the_agents_sweeps_what_escaped_into_the_sandbox(tmp_path: Path) -> None:
    """§7.2 step 16 (sandbox: none): after the agents' groups, every process whose HOME lies
    in this trial's sandbox, started since the environment was made, is killed; nothing else
    is."""
    sandbox_home = tmp_path / "trial" / "sandbox" / "root"
    sandbox_home.mkdir(parents=True)
    sleeper = [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"]

    def spawn(home: Path) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            sleeper, env={**os.environ, "HOME": str(home)}, stdout=subprocess.PIPE
        )
        # Popen returns once the exec began: its environment may not be readable yet
        assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        return process

    older = spawn(sandbox_home)  # before the environment: another run's, left to its owner
    environment = local_trial(tmp_path, Fixture.empty()).env
    escaped, outside = spawn(sandbox_home), spawn(tmp_path)
    try:
        notes = asyncio.run(environment.stop_agents(asyncio.Event()))
        assert notes == [f"killed 1 escaped process(es): [{escaped.pid}]"]
        assert escaped.wait(10) == -9
        assert older.poll() is None and outside.poll() is None
    finally:
        for process in (older, escaped, outside):
            process.kill()
            process.wait()
            assert process.stdout is not None
            process.stdout.close()


IGNORES_TERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


async def test_a_hurried_stop_kills_without_waiting_out_the_grace_period(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(local, "STOP_GRACE_SECONDS", 3600.0)  # only `hurry` can end it
    program = tmp_path / "stubborn"
    program.write_text(f"#!{sys.executable}\n{IGNORES_TERM}")
    program.chmod(0o755)
    agent = LocalAgentProcess("solo-1", lambda: None)
    stdout = tmp_path / "out.log"
    written = watch_file(stdout)
    try:
        files = AgentFiles(writable_tree=tmp_path, cwd=tmp_path)
        await agent.start(
            HostLauncher(), program, files, dict(os.environ), stdout, tmp_path / "err.log"
        )
        while b"ready" not in stdout.read_bytes():  # SIG_IGN is in place before the TERM
            await asyncio.wait_for(written.wait(), 30)
    finally:
        written.close()
    hurry = asyncio.Event()
    stopping = asyncio.create_task(agent.stop(hurry))
    hurry.set()
    await asyncio.wait_for(stopping, 30)  # without `hurry` the TERM-ignoring child takes 3600 s
    assert agent.exit_code == -9


def test_the_second_signal_hurries_the_stopping_trials() -> None:
    interrupt = Interrupt()
    interrupt.trigger()
    assert interrupt.requested.is_set() and not interrupt.hurry.is_set()
    interrupt.trigger()
    assert interrupt.hurry.is_set()


#: prctl(PR_GET_PDEATHSIG): the signal this process gets when its parent dies
READ_PDEATHSIG = (
    "import ctypes; signal = ctypes.c_int(); "
    "ctypes.CDLL(None).prctl(2, ctypes.byref(signal)); print(signal.value)"
)


async def test_exec_runs_tied_and_names_a_missing_program(tmp_path: Path) -> None:
    """Env commands die with the orchestrator (PDEATHSIG set on the command itself); a program
    that does not exist is an error naming it, not the tie's exit status."""
    environment = local_trial(tmp_path, Fixture.empty()).env
    result = await environment.exec([sys.executable, "-c", READ_PDEATHSIG])
    assert result.exit_code == 0 and result.output.strip() == str(int(signal.SIGKILL))
    with pytest.raises(EnvCommandError, match="cannot run no-such-program-xyz"):
        await environment.exec(["no-such-program-xyz"])
