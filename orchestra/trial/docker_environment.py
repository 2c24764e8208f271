"""The docker environment: each trial in its own container of the task's agent layer
(orchestrator.md §5.8, §4.5, §7.2 steps 3/16/17/21, §7.9, §7.10, §9.2).

Agents run inside the container as `docker exec` sessions; their ACP event logs are streamed to
the host by one `tail -F` session per agent (the host copy is what the trial follows) and copied
complete at step 17. After the agents stop the container has no network, so evidence placement
and the verifier happen offline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path, PurePath, PurePosixPath

from orchestra.agents.oracle.registry import DoneProbe
from orchestra.config.fixture import Fixture
from orchestra.config.manifest import EnvironmentOverrides
from orchestra.config.task import Task
from orchestra.files import empty_directory
from orchestra.paths import (
    CONTAINER_BUZZ_BIN_DIR,
    CONTAINER_EVIDENCE,
    CONTAINER_RUNTIME_LOGS,
    CONTAINER_VENV_BIN,
    LOGS_ARTIFACTS,
    EnvPaths,
    TrialPaths,
)
from orchestra.trial.agents import first_of
from orchestra.trial.docker_env import (
    DockerEnvError,
    TrialContainer,
    host_gateway_bind_address,
)
from orchestra.trial.environment import AgentProcess
from orchestra.trial.errors import TrialError, classified
from orchestra.trial.eventlog import EventLogFollower
from orchestra.trial.local_env import render_fixture_files
from orchestra.verify.outcome import NETWORK_NONE, VerifierRun, conclude_verifier_run

#: How agents in a container reach the host (`--add-host host.docker.internal:host-gateway`).
HOST_FROM_CONTAINER = "host.docker.internal"
SUPPORTED_NETWORK_MODE = "public"
#: A `docker exec` client ends right after its process was killed; this only bounds a stuck one.
SESSION_END_SECONDS = 10.0


class DockerAgent:
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
        await asyncio.wait_for(asyncio.shield(session.wait()), SESSION_END_SECONDS)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            session.kill()
        await session.wait()


class DockerEnvironment:
    """Implements `TrialEnvironment` on a `TrialContainer` of the task's agent-layer image."""

    kind = "docker"
    verifier_network = NETWORK_NONE
    oracle_host = HOST_FROM_CONTAINER

    def __init__(
        self,
        trial: TrialPaths,
        fixture: Fixture,
        *,
        image: str,
        job_name: str,
        trial_id: str,
        overrides: EnvironmentOverrides,
        buzz_bin_dir: Path | None,
    ) -> None:
        self.trial = trial
        self.fixture = fixture
        self.image = image
        self.job_name = job_name
        self.trial_id = trial_id
        self.overrides = overrides
        self.buzz_bin_dir = buzz_bin_dir
        self.paths = EnvPaths.docker(fixture.home)
        self.programs_dir: PurePath = CONTAINER_BUZZ_BIN_DIR if buzz_bin_dir else CONTAINER_VENV_BIN
        self.agent_path: str | None = None  # the image's own PATH (§7.9)
        self.inherited: dict[str, str] = {}
        self.container: TrialContainer | None = None
        self._tails: list[asyncio.subprocess.Process] = []

    def _container(self) -> TrialContainer:
        if self.container is None:
            raise DockerEnvError("the trial container was not started")
        return self.container

    async def oracle_listen_address(self) -> str:
        return await host_gateway_bind_address()

    def solve_done_probe(self, state_dir: PurePath) -> DoneProbe | None:
        async def done() -> bool:
            if self.container is None:
                return False
            try:
                await self.container.exec(["test", "-e", str(state_dir / "done")])
            except DockerEnvError:
                return False
            return True

        return done

    # --- step 3 ------------------------------------------------------------------------

    async def prepare(self, task: Task, *, with_solution: bool) -> None:
        environment = task.toml.environment
        if environment.network_mode != SUPPORTED_NETWORK_MODE:
            raise TrialError(
                "UnsupportedNetworkMode",
                f"task {task.name}: network_mode {environment.network_mode!r} is not supported "
                f"by the docker env (agents must reach the relay: use {SUPPORTED_NETWORK_MODE!r})",
            )
        with classified("EnvironmentStartError"):
            await self._start_container(
                cpus=self.overrides.override_cpus or environment.cpus,
                memory_mb=self.overrides.override_memory_mb or environment.memory_mb,
            )
            await self._container().prepare_layout()
            self.trial.buzz_dir.mkdir(parents=True, exist_ok=True)
            await self._install_programs()
        with classified("FixtureSetupError"):
            await self._place_fixture_files()
        if with_solution:
            with classified("EnvironmentStartError"):
                await self._place_solution(task)

    async def _start_container(self, *, cpus: int, memory_mb: int) -> None:
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
            self.agent_path = f"{CONTAINER_BUZZ_BIN_DIR}:{image_path}"

    async def _place_fixture_files(self) -> None:
        container = self._container()
        _, rendered = render_fixture_files(self.trial, self.fixture)
        for spec, record in rendered:
            target = PurePosixPath(spec.path)
            await container.copy_in(record, target)
            await container.exec(["chmod", format(spec.mode_bits, "o"), str(target)])

    async def _place_solution(self, task: Task) -> None:
        container = self._container()
        solution = PurePosixPath(self.paths.solution)
        await container.exec(["rm", "-rf", str(solution)])
        await container.copy_in(task.paths.solution_dir, solution)
        await container.exec(["chmod", "+x", str(self.paths.solve_sh)])

    # --- agents: steps 9-10, 16-17 ----------------------------------------------------------

    async def install_prompt(self, agent_id: str, host_file: Path) -> None:
        await self._container().copy_in(
            host_file, PurePosixPath(self.paths.system_prompt(agent_id))
        )

    async def start_agent(
        self,
        agent_id: str,
        env: dict[str, str],
        on_exit: Callable[[], None],
        stdout: Path,
        stderr: Path,
    ) -> AgentProcess:
        session = await self._container().start_agent(
            agent_id,
            env,
            programs_dir=PurePosixPath(self.programs_dir),
            stdout=stdout,
            stderr=stderr,
        )
        return DockerAgent(agent_id, session, on_exit)

    async def follow_event_log(self, agent_id: str, follower: EventLogFollower) -> None:
        """`tail -n +1 -F` of the container's log appends to the host file the follower reads."""
        container = self._container()
        tail = await container.start_session(
            ["tail", "-n", "+1", "-F", str(self.paths.events_log(agent_id))],
            stdout=follower.path,
            stderr=Path(os.devnull),
        )
        self._tails.append(tail)
        try:
            await follower.follow()
        finally:
            await _end_session(tail)
            follower.read_available()  # the complete log copied at step 17

    async def stop_all(self, agents: list[AgentProcess], hurry: asyncio.Event) -> list[str]:
        """TERM every process but PID 1, ≤ 5 s, KILL; then detach from every network.

        Hurried (a second interrupt, §7.6): the container is removed at once instead, which
        ends every process and `docker exec` session in it.
        """
        if self.container is None:
            return []
        for agent in agents:
            agent.stopping = True
        stopping = asyncio.create_task(self.container.stop_processes())
        if not await first_of(asyncio.shield(stopping), hurry, None):
            stopping.cancel()
            await asyncio.gather(stopping, return_exceptions=True)
            await self.container.remove()
            for agent in agents:
                await agent.stop()
            for tail in self._tails:
                await _end_session(tail)
            return [f"container {self.container.name} removed at once (second interrupt)"]
        for agent in agents:
            await agent.stop()
        for tail in self._tails:
            await _end_session(tail)
        networks = await self.container.disconnect_networks()
        return [f"container {self.container.name} disconnected from {', '.join(networks) or '-'}"]

    async def collect_logs(self) -> None:
        if self.container is not None:
            await self.container.copy_out(CONTAINER_RUNTIME_LOGS, self.trial.buzz_dir)

    # --- steps 18-19 -------------------------------------------------------------------------

    async def install_evidence(self) -> None:
        container = self._container()
        await container.sh(f"rm -rf {LOGS_ARTIFACTS} && mkdir -p {LOGS_ARTIFACTS}")
        await container.copy_in(self.trial.artifacts_evidence_json, CONTAINER_EVIDENCE)

    async def remove_evidence(self) -> None:
        self.trial.artifacts_evidence_json.unlink(missing_ok=True)
        if self.container is not None:
            await self.container.exec(["rm", "-f", str(CONTAINER_EVIDENCE)])

    async def run_verifier(self, tests_dir: Path, timeout_seconds: float) -> VerifierRun:
        """§9.2 in the offline container; the outputs are read from their host copies."""
        empty_directory(self.trial.verifier_dir)
        result = await self._container().run_tests(tests_dir, self.trial, timeout_seconds)
        return conclude_verifier_run(
            self.trial.verifier_dir,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            timeout_seconds=timeout_seconds,
            network=NETWORK_NONE,
        )

    # --- step 21 -----------------------------------------------------------------------------

    async def close(self) -> None:
        if self.container is not None:
            await self.container.remove()
