"""The local environment: a per-trial sandbox on the host (orchestrator.md §5.8, §6, §4.5)."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path, PurePath

from orchestra.agents.oracle.registry import DoneProbe
from orchestra.config.fixture import Fixture, FixtureFile
from orchestra.config.task import Task
from orchestra.paths import EnvPaths, TaskPaths, TrialPaths
from orchestra.trial.agents import LocalAgent, kill_sandbox_escapees, last_allocated_pid
from orchestra.trial.environment import AgentProcess
from orchestra.trial.errors import classified
from orchestra.trial.eventlog import EventLogFollower
from orchestra.verify.local import run_local_verifier
from orchestra.verify.outcome import NETWORK_NOT_ISOLATED, VerifierRun

#: Host variables a local-env agent keeps besides what the orchestrator sets (§7.9).
INHERITED_LOCAL_VARIABLES = ("LANG", "LC_ALL", "TERM")
LOOPBACK = "127.0.0.1"


def create_sandbox(trial: TrialPaths, fixture: Fixture) -> EnvPaths:
    """workspace/, tmp/ and the HOME directory under `<trial>/sandbox/`."""
    env = trial.local_env(fixture.home)
    for directory in (env.workspace, env.tmpdir, env.home, env.logs_artifacts):
        assert directory is not None
        Path(directory).mkdir(parents=True, exist_ok=True)
    trial.buzz_dir.mkdir(parents=True, exist_ok=True)
    return env


def render_fixture_files(
    trial: TrialPaths, fixture: Fixture
) -> tuple[str | None, list[tuple[FixtureFile, Path]]]:
    """Render `[[files]]` into the trial's record copies under `agent/buzz/fixture-files/`.

    Returns the trial's `{{random_hex}}` value (None when there are no files) and each spec
    with its rendered host file.
    """
    if not fixture.files:
        return None, []
    random_hex = secrets.token_hex(16)
    rendered = []
    for spec in fixture.files:
        record = trial.fixture_file_record(spec.path)
        _write_file(record, spec.render(random_hex), spec.mode_bits)
        rendered.append((spec, record))
    return random_hex, rendered


def place_fixture_files(trial: TrialPaths, env: EnvPaths, fixture: Fixture) -> str | None:
    """Render `[[files]]` and place them at their paths inside the sandbox; returns the
    `{{random_hex}}` value."""
    random_hex, rendered = render_fixture_files(trial, fixture)
    for spec, record in rendered:
        _write_file(
            Path(env.fixture_file(spec.path)), record.read_text(encoding="utf-8"), spec.mode_bits
        )
    return random_hex


def _write_file(target: Path, content: str, mode: int) -> None:
    _make_parents(target.parent)
    target.write_text(content, encoding="utf-8")
    os.chmod(target, mode)


def _make_parents(directory: Path) -> None:
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir(mode=0o755)
        os.chmod(path, 0o755)


def place_solution(task: TaskPaths, env: EnvPaths) -> Path:
    """Oracle trials only: copy `solution/` into the sandbox and make solve.sh executable."""
    target = Path(env.solution)
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(task.solution_dir, target)
    solve = Path(env.solve_sh)
    solve.chmod(solve.stat().st_mode | 0o111)
    return solve


class LocalEnvironment:
    """Agents are host processes in their own sessions; no isolation (§5.8)."""

    kind = "local"
    verifier_network = NETWORK_NOT_ISOLATED
    oracle_host = LOOPBACK

    def __init__(
        self, trial: TrialPaths, fixture: Fixture, programs_dir: Path, buzz_bin_dir: Path | None
    ) -> None:
        self.trial = trial
        self.fixture = fixture
        self.paths = trial.local_env(fixture.home)
        self.programs_dir = programs_dir
        host_path = os.environ.get("PATH", os.defpath)
        has_buzz = buzz_bin_dir is not None and (buzz_bin_dir / "buzz").exists()
        self.agent_path: str | None = f"{buzz_bin_dir}:{host_path}" if has_buzz else host_path
        self.inherited = {k: os.environ[k] for k in INHERITED_LOCAL_VARIABLES if k in os.environ}
        self.pid_floor = last_allocated_pid()  # every process of this trial starts after this

    async def oracle_listen_address(self) -> str:
        return LOOPBACK

    def solve_done_probe(self, state_dir: PurePath) -> DoneProbe | None:
        return None

    async def prepare(self, task: Task, *, with_solution: bool) -> None:
        with classified("EnvironmentStartError"):
            self.paths = create_sandbox(self.trial, self.fixture)
        with classified("FixtureSetupError"):
            place_fixture_files(self.trial, self.paths, self.fixture)
        if with_solution:
            with classified("EnvironmentStartError"):
                place_solution(task.paths, self.paths)

    async def install_prompt(self, agent_id: str, host_file: Path) -> None:
        """The host file is the prompt path agents read in the local env."""

    async def start_agent(
        self,
        agent_id: str,
        env: dict[str, str],
        on_exit: Callable[[], None],
        stdout: Path,
        stderr: Path,
    ) -> AgentProcess:
        agent = LocalAgent(agent_id, lambda _agent: on_exit())
        await agent.start(
            self.programs_dir / "buzz-acp", env, Path(self.paths.workspace), stdout, stderr
        )
        return agent

    async def follow_event_log(self, agent_id: str, follower: EventLogFollower) -> None:
        try:
            await follower.follow()
        finally:
            follower.read_available()  # the tail written while the agent was stopping

    async def stop_all(self, agents: list[AgentProcess], hurry: asyncio.Event) -> list[str]:
        """TERM each agent's group, ≤ 5 s (until `hurry`), KILL; then anything left with
        HOME/TMPDIR inside."""
        for agent in agents:
            assert isinstance(agent, LocalAgent)
            await agent.stop(hurry)
        killed = kill_sandbox_escapees(self.trial.sandbox, newer_than=self.pid_floor)
        return [f"killed {len(killed)} escaped process(es): {killed}"] if killed else []

    async def collect_logs(self) -> None:
        """Event logs and agent output are already host files."""

    async def install_evidence(self) -> None:
        """The exporter writes `<trial>/artifacts/buzz-evidence.json`, which is /logs/artifacts."""

    async def remove_evidence(self) -> None:
        self.trial.artifacts_evidence_json.unlink(missing_ok=True)

    async def run_verifier(self, tests_dir: Path, timeout_seconds: float) -> VerifierRun:
        return await run_local_verifier(self.trial, self.fixture.home, tests_dir, timeout_seconds)

    async def close(self) -> None:
        """Nothing to remove: the sandbox stays with the trial's record."""
