"""The seam between a trial and where its agents run (orchestrator.md §5.8).

A trial drives its environment through a few primitives: prepare and close it, start and stop
the agents' processes, run a command, put and get files, follow a growing file, cut it off the
network. What differs between kinds that the trial must know is data (`EnvFacts`), never a
check of the kind. Everything trial-specific (oracle registration, prompts, fixture files, log
collection) lives in the phase modules and is built on these primitives. The verifier of a Buzz
task is not one of them: it never runs where the agents ran (`Verifier`, made by the kind, §9);
a Harbor task's is, since its grade is the state the agents left (`state_verifier`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Protocol

from orchestra.config.task import Task
from orchestra.documents.enums import EnvKind, SandboxKind
from orchestra.errors import OrchestraError
from orchestra.paths import EnvPaths, TrialPaths
from orchestra.verify.inputs import VerifierInputs
from orchestra.verify.outcome import VerifierRun

LOOPBACK = "127.0.0.1"


class EnvCommandError(OrchestraError):
    """A command or transfer in the environment failed; the message names it. Outside a trial
    (`orchestra cleanup`) it is a preflight failure."""

    exit_code = 2


@dataclass(frozen=True)
class EnvFacts:
    """What the trial needs to know about its environment, as data (§5.8, §7.9)."""

    paths: EnvPaths  # the logical paths as agents see them
    programs_dir: PurePath  # where buzz-acp, buzz-agent and buzz-dev-mcp are, as agents see it
    #: the name agents use for the host, e.g. to reach its loopback servers; None: agents share
    #: the host's loopback, so configured URLs work unchanged
    host_alias: str | None
    agent_path: str | None  # PATH for agents; None keeps the environment's own
    inherited: Mapping[str, str]  # host variables agents keep (local env: LANG, LC_ALL, TERM)
    sandbox: SandboxKind  # what keeps the agents in (§5.8, §10.3)

    @property
    def host_address(self) -> str:
        """How agents address a server listening on the host (the oracle, §4.5)."""
        return self.host_alias or LOOPBACK


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None  # None: killed on its timeout
    timed_out: bool
    output: str = ""  # stdout and stderr, when not streamed to a file

    def check(self, what: str) -> ExecResult:
        """This result, or `EnvCommandError` naming `what` when the command failed."""
        if self.exit_code != 0:
            tail = "\n".join(self.output.strip().splitlines()[-5:])
            raise EnvCommandError(f"{what} failed: {tail or f'exit {self.exit_code}'}")
        return self


class AgentProcess(Protocol):
    """One running `buzz-acp`; `exit_code` is set when it exits (observed, not polled, §7.7)."""

    agent_id: str
    exit_code: int | None
    stopping: bool  # set once the trial stops it: its exit is expected from then on


class TrialEnvironment(Protocol):
    """Where one trial's agents run: the host sandbox or a container."""

    @property
    def facts(self) -> EnvFacts: ...

    async def prepare(self) -> None:
        """Step 3: the sandbox or container with the agents' directories, empty artifacts."""

    async def close(self) -> None:
        """Step 21: remove what `prepare` made that must not outlive the trial."""

    async def start_agent(
        self,
        agent_id: str,
        env: Mapping[str, str],
        *,
        stdout: Path,
        stderr: Path,
        on_exit: Callable[[], None],
    ) -> AgentProcess:
        """`buzz-acp` from the programs directory in the agents' working directory, with
        exactly `env` (§7.9), output streamed to the host files; `on_exit` when it exits."""

    async def stop_agents(self, hurry: asyncio.Event) -> list[str]:
        """Step 16: stop every agent started here and whatever they started; returns notes
        for trial.log. Once `hurry` is set (a second SIGINT/SIGTERM, §7.6) no grace period is
        waited for."""

    async def isolate(self) -> list[str]:
        """Cut the environment off every network where it can (§7.2 step 16); returns notes
        for trial.log."""

    def state_verifier(self) -> Verifier:
        """The verifier of a Harbor task, whose grade is the state the agents left here: it
        runs in this environment once every agent process is dead (docs/decisions.md D46)."""

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
        """Run a command in the environment, stdout and stderr merged into the host file
        `output` (else captured); on timeout it is killed with everything it started. `env`
        may end up on a command line: never pass secrets."""

    async def put_file(self, source: Path, target: PurePath, *, mode: int | None = None) -> None:
        """Copy a host file to `target` (parents created), then set `mode` when given."""

    async def put_tree(self, source: Path, target: PurePath) -> None:
        """Replace directory `target` with a copy of the host directory `source`."""

    async def get_tree(self, source: PurePath, target: Path) -> None:
        """Copy the contents of directory `source` into the host directory `target`."""

    async def read_file(self, path: PurePath, limit: int) -> bytes | None:
        """The bytes of the regular file `path` as read by the harness itself (no program the
        agents could replace); None when it is missing, not a regular file (a symlink, say) or
        larger than `limit` bytes."""

    def follow_file(self, path: PurePath, host_copy: Path) -> AbstractAsyncContextManager[None]:
        """While inside, the host file `host_copy` grows as `path` is written (§7.10)."""


class Verifier(Protocol):
    """Runs a task's `tests/test.sh` over the trial's verifier inputs and reads its reward
    (§9); notes for trial.log go to `log`."""

    async def run(
        self, inputs: VerifierInputs, timeout_seconds: float, log: Callable[[str], None]
    ) -> VerifierRun: ...


class EnvironmentKind(Protocol):
    """What a job knows about its environment kind: how to make each trial's environment and
    verifier. The one place the kinds differ in code (orchestra.jobs.runner picks one)."""

    name: EnvKind

    async def host_listen_address(self) -> str:
        """The host address servers for agents (the oracle, §4.5) must listen on."""

    def environment(self, trial: TrialPaths, task: Task, trial_id: str) -> TrialEnvironment: ...

    def verifier(self, trial: TrialPaths, task: Task, trial_id: str) -> Verifier:
        """The verifier of a trial; it runs once every agent process of the trial is dead and
        sees nothing of where they ran."""
