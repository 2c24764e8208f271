"""What every trial of a job shares: condition, stack, clients, registry, oracle (§7.3, §7.5)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestra.agents.oracle.server import OracleServer
from orchestra.config.condition import Condition
from orchestra.documents.run_config import TrialSettings
from orchestra.documents.trial import TrialResult
from orchestra.paths import JobPaths
from orchestra.stack.info import StackInfo
from orchestra.stack.registry import Registry
from orchestra.stack.state import BenchmarkState
from orchestra.stack.watch import StackWatch
from orchestra.trial.env.protocol import EnvironmentKind
from orchestra.trial.relay_ops import ClientPool


class OracleHost:
    """The process's one oracle server, started on first use (orchestrator.md §4.5)."""

    def __init__(self) -> None:
        self.server: OracleServer | None = None
        self._lock = asyncio.Lock()

    async def ensure(self, model_names: list[str], host: str) -> OracleServer:
        """The running server, started listening on `host` when there is none yet (a job
        runs one environment kind, so every trial asks for the same address)."""
        async with self._lock:
            if self.server is None:
                server = OracleServer(model_names, host)
                await server.start()
                self.server = server
            return self.server

    async def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            await server.stop()


@dataclass
class JobContext:
    """The services a trial is given; it depends on nothing else (no process globals)."""

    job_name: str
    job_paths: JobPaths
    condition: Condition
    stack: StackInfo
    environments: EnvironmentKind  # makes each trial's environment and verifier
    state: BenchmarkState
    options: TrialSettings  # the run's knobs every trial reads
    api_keys: dict[str, str]  # api_key_env name -> value, resolved at preflight
    stable_clients: ClientPool
    registry: Registry
    oracle: OracleHost
    log: Callable[[str], None] = lambda _line: None
    on_trial_update: Callable[[TrialResult], None] = lambda _result: None
    #: an in-flight trial's cost so far (trial name, USD), on every usage change (§7.13)
    on_live_cost: Callable[[str, float], None] = lambda _name, _cost: None
    #: an in-flight trial's agent retries a provider call (trial name, `provider HTTP 500, 2/4`)
    on_llm_retry: Callable[[str, str], None] = lambda _name, _detail: None
    #: an in-flight trial's agents' activity (trial name, `1 in flight, 3.2k tokens, …`)
    on_activity: Callable[[str, str], None] = lambda _name, _text: None
    #: set by a second SIGINT/SIGTERM: stop without grace periods (§7.6)
    hurry: asyncio.Event = field(default_factory=asyncio.Event)
    #: the stack's health: a trial that needs it fails once it went down (§5.1)
    watch: StackWatch = field(default_factory=StackWatch)
    #: every secret of every trial these services launched: the relay's stored rows of a
    #: trial's window hold other trials' events too, redacted with these (§8.9)
    launched_secrets: set[str] = field(default_factory=set)
