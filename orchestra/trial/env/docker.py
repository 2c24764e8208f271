"""The docker environment: each trial's agents in their own container of the task's agent
layer (orchestrator.md §5.8, §7.2 steps 3/16/21, §7.9, §7.10); its verifier in another container,
of the task's image (§9.2).

Agents run inside the container as `docker exec` sessions; a followed file (an ACP event log)
is streamed to its host copy by a `tail -F` session. After the agents stop, the container is
cut off every network and what they changed outside their own directories is logged; nothing is
ever read from it for the verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path, PurePath, PurePosixPath

from orchestra.config.manifest import EnvironmentOverrides
from orchestra.config.task import Task
from orchestra.documents.enums import EnvKind, ErrorType, SandboxKind
from orchestra.paths import (
    CONTAINER_BUZZ_BIN_DIR,
    CONTAINER_SOLUTION,
    CONTAINER_TMP,
    CONTAINER_VENV_BIN,
    CONTAINER_WORKSPACE,
    LOGS_AGENT,
    LOGS_ARTIFACTS,
    OPT_BUZZ,
    EnvPaths,
    TrialPaths,
)
from orchestra.processes import first_of
from orchestra.stack.images import TaskImages
from orchestra.trial.env.container import (
    DockerEnvError,
    TrialContainer,
    host_gateway_bind_address,
)
from orchestra.trial.env.protocol import (
    AgentProcess,
    EnvFacts,
    ExecResult,
    TrialEnvironment,
    Verifier,
)
from orchestra.trial.env.state_verifiers import InEnvironmentVerifier
from orchestra.trial.env.verifiers import ContainerVerifier
from orchestra.trial.errors import TrialError

#: How agents in a container reach the host (`--add-host host.docker.internal:host-gateway`).
HOST_FROM_CONTAINER = "host.docker.internal"
SUPPORTED_NETWORK_MODE = "public"
#: A `docker exec` client ends right after its process was killed; this only bounds a stuck one.
SESSION_END_SECONDS = 10.0
#: Where agents and the harness write in the container as a matter of course; changes anywhere
#: else (`docker diff`) are named in trial.log after the agents stop.
AGENT_AREAS = (CONTAINER_WORKSPACE, CONTAINER_TMP, OPT_BUZZ, LOGS_ARTIFACTS, CONTAINER_SOLUTION)
CHANGES_SHOWN = 20


class DockerAgentProcess:
    """One `buzz-acp` exec session; `exit_code` is set when the session ends (§7.7)."""

    def __init__(
        self, agent_id: str, session: asyncio.subprocess.Process, on_exit: Callable[[], None]
    ) -> None:
        self.agent_id = agent_id
        self.exit_code: int | None = None
        self.stopping = False
        self._session = session
        self._on_exit = on_exit
        self._watch = asyncio.create_task(self._wait(), name=f"agent-exit-{agent_id}")

    async def _wait(self) -> None:
        self.exit_code = await self._session.wait()
        self._on_exit()

    async def stop(self) -> None:
        """Wait for the session to end; the container-wide kill of step 16 ends it."""
        self.stopping = True
        await _end_session(self._session)
        await self._watch


async def _end_session(session: asyncio.subprocess.Process) -> None:
    try:
        async with asyncio.timeout(SESSION_END_SECONDS):
            await asyncio.shield(session.wait())
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            session.kill()
        await session.wait()


class DockerEnvironment:
    """Implements `TrialEnvironment` on a `TrialContainer` of the task's agent-layer image."""

    def __init__(
        self,
        trial: TrialPaths,
        task: Task,
        *,
        image: str,
        job_name: str,
        trial_id: str,
        overrides: EnvironmentOverrides,
        buzz_bin_dir: Path | None,
        keep: bool = False,
    ) -> None:
        self.trial = trial
        self.task = task
        self.image = image
        self.job_name = job_name
        self.trial_id = trial_id
        self.overrides = overrides
        self.buzz_bin_dir = buzz_bin_dir
        self.keep = keep  # `--keep-containers`: the container outlives the trial, for debugging
        self._facts = EnvFacts(
            paths=EnvPaths.docker(task.fixture.home),
            programs_dir=CONTAINER_BUZZ_BIN_DIR if buzz_bin_dir else CONTAINER_VENV_BIN,
            host_alias=HOST_FROM_CONTAINER,
            agent_path=None,  # the image's own PATH (§7.9) unless `--buzz-bin-dir` has a buzz
            inherited={},
            sandbox=SandboxKind.DOCKER,
        )
        self.container: TrialContainer | None = None
        self.removed = False  # by a hurried stop (§7.6): nothing is left to reach in it
        self._agents: list[DockerAgentProcess] = []
        self._tails: list[asyncio.subprocess.Process] = []
        self._placed: list[PurePosixPath] = []  # put_file targets: the harness's own changes

    @property
    def facts(self) -> EnvFacts:
        return self._facts

    def _container(self) -> TrialContainer:
        if self.container is None:
            raise DockerEnvError("the trial container was not started")
        return self.container

    # --- steps 3 and 21 --------------------------------------------------------------------

    async def prepare(self) -> None:
        environment = self.task.toml.environment
        if environment.network_mode != SUPPORTED_NETWORK_MODE:
            raise TrialError(
                ErrorType.UNSUPPORTED_NETWORK_MODE,
                f"task {self.task.name}: network_mode {environment.network_mode!r} is not "
                f"supported by the docker env (agents must reach the relay: use "
                f"{SUPPORTED_NETWORK_MODE!r})",
            )
        await self._start_container(*container_resources(self.task, self.overrides))
        if self.task.harbor is None:
            await self._container().prepare_layout()
        else:  # the agents work in the task's own working directory (docs/decisions.md D46)
            workdir = self.task.harbor.workdir or await self._container().working_dir()
            await self._container().prepare_layout(workdir, LOGS_AGENT)
            paths = dataclasses.replace(self._facts.paths, workspace=workdir)
            self._facts = dataclasses.replace(self._facts, paths=paths)
        await self._install_programs()

    async def _start_container(self, cpus: float, memory_mb: int) -> None:
        """`docker run`, allowed to finish when the trial is cancelled meanwhile: an interrupted
        client may still leave a container behind, which `close()` must know to remove."""
        start = asyncio.ensure_future(
            TrialContainer.start(
                self.image,
                job_name=self.job_name,
                trial_id=self.trial_id,
                cpus=cpus,
                memory_mb=memory_mb,
            )
        )
        try:
            self.container = await asyncio.shield(start)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self.container = await start
            raise

    async def _install_programs(self) -> None:
        """`--buzz-bin-dir`: its files at /opt/buzz/bin (0755), first on PATH when it holds
        a `buzz`."""
        if self.buzz_bin_dir is None:
            return
        container = self._container()
        await container.copy_in(self.buzz_bin_dir, CONTAINER_BUZZ_BIN_DIR)
        await container.sh(f"chmod 0755 {CONTAINER_BUZZ_BIN_DIR}/*")
        if (self.buzz_bin_dir / "buzz").exists():
            image_path = (await container.sh('printf %s "$PATH"')).stdout
            self._facts = dataclasses.replace(
                self._facts, agent_path=f"{CONTAINER_BUZZ_BIN_DIR}:{image_path}"
            )

    async def close(self) -> None:
        if self.container is not None and not self.keep:
            await self.container.remove()

    # --- agents (§7.9, §7.2 step 16) ----------------------------------------------------------

    async def start_agent(
        self,
        agent_id: str,
        env: Mapping[str, str],
        *,
        stdout: Path,
        stderr: Path,
        on_exit: Callable[[], None],
    ) -> AgentProcess:
        session = await self._container().start_agent(
            agent_id,
            env,
            programs_dir=PurePosixPath(self._facts.programs_dir),
            workdir=PurePosixPath(self._facts.paths.workspace),
            stdout=stdout,
            stderr=stderr,
        )
        agent = DockerAgentProcess(agent_id, session, on_exit)
        self._agents.append(agent)
        return agent

    async def stop_agents(self, hurry: asyncio.Event) -> list[str]:
        """TERM every process but PID 1, ≤ 5 s, KILL.

        Hurried (a second interrupt, §7.6): the container is removed at once instead, which
        ends every process and `docker exec` session in it.
        """
        if self.container is None:
            return []
        for agent in self._agents:
            agent.stopping = True
        stopping = asyncio.create_task(self.container.stop_processes())
        notes = []
        if not await first_of(asyncio.shield(stopping), hurry, None):
            stopping.cancel()
            await asyncio.gather(stopping, return_exceptions=True)
            await self.container.remove()
            self.removed = True
            notes.append(f"container {self.container.name} removed at once (second interrupt)")
        for agent in self._agents:
            await agent.stop()
        for tail in self._tails:
            await _end_session(tail)
        if not self.removed:
            notes += await self._changes_note()
        return notes

    async def _changes_note(self) -> list[str]:
        """What the agents changed outside their own directories and the files the harness
        placed (`docker diff`; a placed fixture file's content is compared by the trial), for
        the record: none of it reaches the verifier, which runs in a container of its own."""
        container = self._container()
        try:
            areas = (*AGENT_AREAS, PurePosixPath(self._facts.paths.workspace), *self._placed)
            changed = outside_areas(await container.changes(), areas)
        except DockerEnvError as error:
            return [f"docker diff {container.name} failed: {error}"]
        if not changed:
            return []
        shown = ", ".join(changed[:CHANGES_SHOWN]) + (" …" if len(changed) > CHANGES_SHOWN else "")
        return [
            f"agents changed {len(changed)} path(s) of container {container.name} "
            f"({container.id[:12]}) outside their directories: {shown}"
        ]

    def state_verifier(self) -> Verifier:
        """A Harbor task's verifier: in this container, once the agents are stopped."""
        assert self.task.harbor is not None
        return InEnvironmentVerifier(self, self.trial, self.task.harbor.verifier_env)

    async def isolate(self) -> list[str]:
        """Detach from every network `docker inspect` lists."""
        if self.container is None or self.removed:
            return []
        networks = await self.container.disconnect_networks()
        return [f"container {self.container.name} disconnected from {', '.join(networks) or '-'}"]

    # --- commands and files ---------------------------------------------------------------------

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
        return await self._container().run(
            command,
            output=output,
            timeout_seconds=timeout_seconds,
            workdir=None if workdir is None else PurePosixPath(workdir),
            env=env,
            user=user,
        )

    async def put_file(self, source: Path, target: PurePath, *, mode: int | None = None) -> None:
        container = self._container()
        await container.copy_in(source, PurePosixPath(target))
        self._placed.append(PurePosixPath(target))
        if mode is not None:
            await container.exec(["chmod", format(mode, "o"), str(target)])

    async def put_tree(self, source: Path, target: PurePath) -> None:
        await self._container().replace_directory(source, PurePosixPath(target))

    async def get_tree(self, source: PurePath, target: Path) -> None:
        await self._container().copy_out(PurePosixPath(source), target)

    async def read_file(self, path: PurePath, limit: int) -> bytes | None:
        return await self._container().read_file(PurePosixPath(path), limit)

    @contextlib.asynccontextmanager
    async def follow_file(self, path: PurePath, host_copy: Path) -> AsyncIterator[None]:
        """`tail -n +1 -F` of the container's file appends to `host_copy`."""
        tail = await self._container().start_session(
            ["tail", "-n", "+1", "-F", str(path)], stdout=host_copy, stderr=Path(os.devnull)
        )
        self._tails.append(tail)
        try:
            yield
        finally:
            await _end_session(tail)


class DockerKind:
    """The docker env of a job: one container per trial from each task's agent layer, built
    before any trial (`images`: task name → agent-layer image); the verifier in the container."""

    name = EnvKind.DOCKER

    def __init__(
        self,
        images: Mapping[str, TaskImages],
        *,
        job_name: str,
        overrides: EnvironmentOverrides,
        buzz_bin_dir: Path | None,
        keep_containers: bool = False,
    ) -> None:
        self.images = images
        self.job_name = job_name
        self.overrides = overrides
        self.buzz_bin_dir = buzz_bin_dir
        self.keep_containers = keep_containers

    async def host_listen_address(self) -> str:
        return await host_gateway_bind_address()

    def environment(self, trial: TrialPaths, task: Task, trial_id: str) -> TrialEnvironment:
        return DockerEnvironment(
            trial,
            task,
            image=self.images[task.name].agent_layer,
            job_name=self.job_name,
            trial_id=trial_id,
            overrides=self.overrides,
            buzz_bin_dir=self.buzz_bin_dir,
            keep=self.keep_containers,
        )

    def verifier(self, trial: TrialPaths, task: Task, trial_id: str) -> Verifier:
        cpus, memory_mb = container_resources(task, self.overrides)
        return ContainerVerifier(
            trial,
            image=self.images[task.name].task,
            job_name=self.job_name,
            trial_id=trial_id,
            cpus=cpus,
            memory_mb=memory_mb,
            keep=self.keep_containers,
        )


def container_resources(task: Task, overrides: EnvironmentOverrides) -> tuple[float, int]:
    """(cpus, memory MB) of a trial's containers: the task's `[environment]` with the
    manifest's overrides (§5.8)."""
    environment = task.toml.environment
    return (
        overrides.override_cpus or environment.cpus,
        overrides.override_memory_mb or environment.memory_mb,
    )


def outside_areas(changes: Sequence[str], areas: Sequence[PurePosixPath]) -> list[str]:
    """The changed paths (`docker diff`) that are not inside `areas`, without the directories
    listed only because something below them changed."""
    inside = [
        path
        for path in map(PurePosixPath, changes)
        if not any(path == area or area in path.parents or path in area.parents for area in areas)
    ]
    parents = {parent for path in inside for parent in path.parents}
    return sorted(str(path) for path in inside if path not in parents)
