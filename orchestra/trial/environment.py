"""The seam between a trial and where its agents and verifier run (orchestrator.md §5.8).

`Trial` talks to a `TrialEnvironment`; `LocalEnvironment` (orchestra.trial.local_env) is the
host sandbox, `DockerEnvironment` (orchestra.trial.docker_environment) a per-trial container.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Protocol

from orchestra.agents.oracle.registry import DoneProbe
from orchestra.config.task import Task
from orchestra.paths import EnvPaths
from orchestra.trial.eventlog import EventLogFollower
from orchestra.verify.outcome import VerifierRun


class AgentProcess(Protocol):
    """One running `buzz-acp`; `exit_code` is set when it exits (observed, not polled)."""

    agent_id: str
    exit_code: int | None
    stopping: bool

    async def stop(self) -> None: ...


class TrialEnvironment(Protocol):
    kind: str  # "local" | "docker"
    verifier_network: str  # "none" | "not-isolated"
    paths: EnvPaths  # the logical paths as agents and the verifier see them
    programs_dir: PurePath  # where buzz-acp, buzz-agent and buzz-dev-mcp are, as agents see it
    oracle_host: str  # how agents reach the oracle server's host
    agent_path: str | None  # PATH for agents; None keeps the environment's own
    inherited: dict[str, str]  # host variables agents keep (local env: LANG, LC_ALL, TERM)

    async def oracle_listen_address(self) -> str:
        """The host address the oracle server must listen on for these agents (§4.5)."""

    def solve_done_probe(self, state_dir: PurePath) -> DoneProbe | None:
        """How the oracle checks `<state_dir>/done`; None: it is a host path (§4.5 step 4)."""

    async def prepare(self, task: Task, *, with_solution: bool) -> None:
        """Step 3: sandbox or container, fixture files, and (oracle) the solution."""

    async def install_prompt(self, agent_id: str, host_file: Path) -> None:
        """Make the composed prompt (already written on the host) visible to the agent."""

    async def start_agent(
        self,
        agent_id: str,
        env: dict[str, str],
        on_exit: Callable[[], None],
        stdout: Path,
        stderr: Path,
    ) -> AgentProcess: ...

    async def follow_event_log(self, agent_id: str, follower: EventLogFollower) -> None:
        """Feed the agent's ACP event log into `follower` as it is written, until cancelled."""

    async def stop_all(self, agents: list[AgentProcess], hurry: asyncio.Event) -> list[str]:
        """Step 16: stop every process of the trial; returns notes for trial.log.

        Once `hurry` is set (a second SIGINT/SIGTERM, §7.6) no grace period is waited for:
        processes are killed and containers removed at once.
        """

    async def collect_logs(self) -> None:
        """Step 17: bring the complete runtime logs to the host (best effort)."""

    async def install_evidence(self) -> None:
        """Place the host's `artifacts/buzz-evidence.json` at /logs/artifacts (emptied first)."""

    async def remove_evidence(self) -> None:
        """Remove a partial evidence file from the environment after an export failure."""

    async def run_verifier(self, tests_dir: Path, timeout_seconds: float) -> VerifierRun: ...

    async def close(self) -> None:
        """Step 21: remove the container (docker env)."""
