"""The local environment: a per-trial sandbox on the host (orchestrator.md §5.8).

The logical paths are host paths, so most transfers are copies within the trial directory, and
a transfer onto itself (the agents' logs, the evidence) is nothing to do. Each agent tree is
started by the job's launcher (`trial.env.sandbox`): in a bubblewrap sandbox that sees only the
trial's sandbox directory, or, where there is none, as a host process in its own session.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path, PurePath, PurePosixPath

from orchestra.config.task import Task
from orchestra.documents.enums import EnvKind, ErrorType, SandboxKind
from orchestra.files import make_parents, read_regular_file
from orchestra.paths import CONTAINER_SOLUTION, LOGS, LOGS_AGENT, TrialPaths
from orchestra.processes import kill_group, kill_processes_in, last_allocated_pid
from orchestra.stack.info import scripts_dir
from orchestra.trial.env.commands import run_command_to_end
from orchestra.trial.env.local_image import LocalImageError, host, read_local_image
from orchestra.trial.env.protocol import (
    LOOPBACK,
    AgentProcess,
    EnvCommandError,
    EnvFacts,
    ExecResult,
    TrialEnvironment,
    Verifier,
)
from orchestra.trial.env.sandbox import AgentFiles, AgentTree, Launcher, Mount, TreeLaunch
from orchestra.trial.env.state_verifiers import SandboxStateVerifier
from orchestra.trial.env.verifiers import HostVerifier
from orchestra.trial.errors import TrialError

#: Host variables a local-env agent keeps besides what the orchestrator sets (§7.9).
INHERITED_LOCAL_VARIABLES = ("LANG", "LC_ALL", "TERM")
STOP_GRACE_SECONDS = 5.0


class LocalAgentProcess:
    """One `buzz-acp` tree, started by the launcher, stdout/stderr streamed to host files."""

    def __init__(self, agent_id: str, on_exit: Callable[[], None]) -> None:
        self.agent_id = agent_id
        self._on_exit = on_exit
        self.tree: AgentTree | None = None
        self.exit_code: int | None = None
        self.stopping = False
        self._watch: asyncio.Task[None] | None = None

    async def start(
        self,
        launcher: Launcher,
        program: Path,
        files: AgentFiles,
        env: Mapping[str, str],
        stdout: Path,
        stderr: Path,
    ) -> None:
        try:
            self.tree = await launcher.start(TreeLaunch([str(program)], files, env, stdout, stderr))
        except OSError as error:
            raise EnvCommandError(f"{self.agent_id}: cannot start {program}: {error}") from None
        self._watch = asyncio.create_task(self._wait(), name=f"agent-exit-{self.agent_id}")

    async def _wait(self) -> None:
        assert self.tree is not None
        self.exit_code = await self.tree.process.wait()
        self._on_exit()

    @property
    def running(self) -> bool:
        return self.tree is not None and self.exit_code is None

    async def stop(self, hurry: asyncio.Event | None = None) -> None:
        """TERM the tree's program, up to 5 s (no longer once `hurry` is set), then KILL what
        is left of the tree: children may outlive the program."""
        if self.tree is None:
            return
        self.stopping = True
        await self.tree.stop(grace=STOP_GRACE_SECONDS, hurry=hurry)
        if self._watch is not None:
            await self._watch


class LocalEnvironment:
    """Implements `TrialEnvironment` on `<trial>/sandbox/`."""

    def __init__(
        self,
        trial: TrialPaths,
        task: Task,
        programs_dir: Path,
        buzz_bin_dir: Path | None,
        launcher: Launcher,
    ) -> None:
        self.trial = trial
        self.launcher = launcher
        host_path = os.environ.get("PATH", os.defpath)
        has_buzz = buzz_bin_dir is not None and (buzz_bin_dir / "buzz").exists()
        inherited = {k: os.environ[k] for k in INHERITED_LOCAL_VARIABLES if k in os.environ}
        self._facts = EnvFacts(
            paths=trial.local_env(task.fixture.home),
            programs_dir=programs_dir,
            host_alias=None,
            agent_path=f"{buzz_bin_dir}:{host_path}" if has_buzz else host_path,
            inherited=inherited,
            sandbox=launcher.kind,
        )
        self.pid_floor = last_allocated_pid()  # every process of this trial starts after this
        self._agents: list[LocalAgentProcess] = []
        self.task = task
        self._mounts: tuple[Mount, ...] = ()  # a Harbor task's directories (`_prepare_harbor`)

    @property
    def facts(self) -> EnvFacts:
        return self._facts

    async def prepare(self) -> None:
        """workspace/, tmp/ and the HOME directory under `<trial>/sandbox/`, plus artifacts/;
        for a Harbor task its files instead of workspace/ (`_prepare_harbor`)."""
        paths = self._facts.paths
        _make_directories(paths.tmpdir, paths.home, paths.logs_artifacts)
        if self.task.harbor is None:
            _make_directories(paths.workspace)
        else:
            self._prepare_harbor(self.task.harbor.workdir)

    def _prepare_harbor(self, workdir: PurePosixPath | None) -> None:
        """The Dockerfile's files under `<trial>/sandbox/<path>`, each top-level directory
        (e.g. `/app`) and `/logs` shown at its container path, the agents' working directory
        the task's (docs/decisions.md D46). Needs the bubblewrap sandbox: only it can show them
        there."""
        if self.launcher.kind is not SandboxKind.BWRAP:
            raise TrialError(
                ErrorType.ENVIRONMENT_START_ERROR,
                f"task {self.task.name} is a Harbor task: the local env runs it only in the "
                "bubblewrap sandbox, which shows its files at their container paths "
                "(install bubblewrap, or use --env docker)",
            )
        try:
            image = read_local_image(self.task.paths.environment_dir)
        except LocalImageError as error:
            raise TrialError(ErrorType.ENVIRONMENT_START_ERROR, str(error)) from None
        sandbox = self.trial.sandbox
        image.materialize(sandbox)
        (host(sandbox, LOGS_AGENT)).mkdir(parents=True, exist_ok=True)
        self._mounts = tuple(
            Mount(host(sandbox, top), top) for top in (*image.top_directories, LOGS)
        )
        paths = dataclasses.replace(self._facts.paths, workspace=workdir or image.workdir)
        self._facts = dataclasses.replace(self._facts, paths=paths)

    def _harbor_mounts(self) -> tuple[Mount, ...]:
        """The task's directories, and `/solution` once the oracle's solution is there."""
        solution = Path(self._facts.paths.solution)
        if not self._mounts or not solution.is_dir():
            return self._mounts
        return (*self._mounts, Mount(solution, CONTAINER_SOLUTION))

    def state_verifier(self) -> Verifier:
        """A Harbor task's verifier: a sandbox over the files the agents left."""
        assert self.task.harbor is not None
        return SandboxStateVerifier(
            self.launcher,
            self.trial,
            self._harbor_mounts(),
            self._facts.paths.workspace,
            self.task.harbor.verifier_env,
        )

    async def close(self) -> None:
        """Nothing to remove: the sandbox stays with the trial's record."""

    async def start_agent(
        self,
        agent_id: str,
        env: Mapping[str, str],
        *,
        stdout: Path,
        stderr: Path,
        on_exit: Callable[[], None],
    ) -> AgentProcess:
        agent = LocalAgentProcess(agent_id, on_exit)
        self._agents.append(agent)
        paths = self._facts.paths
        files = AgentFiles(
            writable_tree=self.trial.sandbox,
            cwd=paths.workspace,
            read_only_files=(Path(paths.system_prompt(agent_id)),),
            writable_files=(
                Path(paths.events_log(agent_id)),
                Path(paths.trajectory_log(agent_id)),
            ),
            mounts=self._harbor_mounts(),
        )
        program = Path(self._facts.programs_dir) / "buzz-acp"
        await agent.start(self.launcher, program, files, env, stdout, stderr)
        return agent

    async def stop_agents(self, hurry: asyncio.Event) -> list[str]:
        """TERM each agent's program, ≤ 5 s (until `hurry`), KILL its tree; unsandboxed, then
        anything left with HOME/TMPDIR inside the sandbox (a sandbox lets nothing escape)."""
        for agent in self._agents:
            await agent.stop(hurry)
        if self.launcher.kind is not SandboxKind.NONE:
            return []
        killed = await asyncio.to_thread(
            kill_processes_in, self.trial.sandbox, newer_than=self.pid_floor
        )
        return [f"killed {len(killed)} escaped process(es): {killed}"] if killed else []

    async def isolate(self) -> list[str]:
        """The host's network cannot be taken away."""
        return []

    async def exec(
        self,
        command: Sequence[str],
        *,
        output: Path | None = None,
        timeout_seconds: float = 60.0,
        workdir: PurePath | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult:
        if user is not None:
            raise EnvCommandError(f"the local env cannot run commands as {user!r}")
        variables = {"PATH": self._facts.agent_path or os.defpath, **self._facts.inherited}
        variables.update(env or {})
        return await run_command_to_end(
            command,
            output=output,
            timeout_seconds=timeout_seconds,
            abort=kill_group,
            cwd=workdir,
            env=variables,
            start_new_session=True,
        )

    def _on_host(self, path: PurePath) -> Path:
        """Where a path the agents see lies on the host: under a Harbor task's directory
        (`/app`) it is that directory's copy in the sandbox."""
        for mount in self._mounts:
            if PurePosixPath(path).is_relative_to(mount.target):
                return mount.source / PurePosixPath(path).relative_to(mount.target)
        return Path(path)

    async def put_file(self, source: Path, target: PurePath, *, mode: int | None = None) -> None:
        _copy_file(source, self._on_host(target), mode)

    async def put_tree(self, source: Path, target: PurePath) -> None:
        if not _same(source, self._on_host(target)):
            _replace_tree(source, self._on_host(target))

    async def get_tree(self, source: PurePath, target: Path) -> None:
        if not _same(self._on_host(source), target):
            shutil.copytree(self._on_host(source), target, dirs_exist_ok=True)

    async def read_file(self, path: PurePath, limit: int) -> bytes | None:
        return read_regular_file(self._on_host(path), limit)

    @contextlib.asynccontextmanager
    async def follow_file(self, path: PurePath, host_copy: Path) -> AsyncIterator[None]:
        """Agents write the host file itself."""
        if not _same(Path(path), host_copy):
            raise ValueError(f"the local env writes {path} itself, not {host_copy}")
        yield


def _same(first: Path, second: Path) -> bool:
    return first.absolute() == second.absolute()


# Local file operations are short and synchronous, as everywhere in the trial's own directory.


def _make_directories(*directories: PurePath | None) -> None:
    for directory in directories:
        assert directory is not None
        Path(directory).mkdir(parents=True, exist_ok=True)


def _copy_file(source: Path, destination: Path, mode: int | None) -> None:
    if not _same(source, destination):
        make_parents(destination.parent)
        shutil.copyfile(source, destination)
        if mode is None:
            shutil.copymode(source, destination)
    if mode is not None:
        os.chmod(destination, mode)


def _replace_tree(source: Path, destination: Path) -> None:
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(source, destination)


class LocalKind:
    """The local env of a job: agents from this package's console scripts (or
    `--buzz-bin-dir`) started by `launcher`, the verifier on the host (§9.3)."""

    name = EnvKind.LOCAL

    def __init__(self, buzz_bin_dir: Path | None, launcher: Launcher) -> None:
        self.buzz_bin_dir = buzz_bin_dir
        self.launcher = launcher

    async def host_listen_address(self) -> str:
        return LOOPBACK

    def environment(self, trial: TrialPaths, task: Task, trial_id: str) -> TrialEnvironment:
        return LocalEnvironment(
            trial, task, self.buzz_bin_dir or scripts_dir(), self.buzz_bin_dir, self.launcher
        )

    def verifier(self, trial: TrialPaths, task: Task, trial_id: str) -> Verifier:
        return HostVerifier(trial, task.fixture.home)
