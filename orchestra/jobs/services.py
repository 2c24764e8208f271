"""What the trials of one job share, built once per job where they run: the environment kind,
the registry, the stable identities' clients and the `JobContext` (§5.8, §7.3, §7.5).

The local executor builds it in the orchestrator's process; a Ray node host builds the same one
on its node from the node's own stack (scale-out.md §2), so a trial runs the same code anywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from orchestra.config.condition import Condition
from orchestra.documents.enums import EnvKind
from orchestra.documents.run_config import TrialSettings
from orchestra.documents.trial import TrialResult
from orchestra.jobs.plan import PlannedJob
from orchestra.paths import JobPaths
from orchestra.stack.images import task_images
from orchestra.stack.info import StackInfo
from orchestra.stack.registry import Registry
from orchestra.stack.state import BenchmarkState
from orchestra.stack.watch import StackWatch
from orchestra.trial.context import JobContext, OracleHost
from orchestra.trial.env.docker import DockerKind
from orchestra.trial.env.local import LocalKind
from orchestra.trial.env.protocol import EnvironmentKind
from orchestra.trial.env.sandbox import SandboxSupport, local_launcher, sandbox_support
from orchestra.trial.relay_ops import ClientPool


@dataclass
class JobServices:
    """What the trials of a job share where they run: the condition, the stack, the state,
    the trial knobs and the keys; the local executor and each Ray node host build one."""

    condition: Condition
    environment: EnvKind
    stack: StackInfo
    state: BenchmarkState
    options: TrialSettings
    api_keys: dict[str, str]
    jobs_dir: Path
    oracle: OracleHost = field(default_factory=OracleHost)
    #: every secret of every trial launched here (JobContext.launched_secrets)
    launched_secrets: set[str] = field(default_factory=set)
    #: the jobs directory that holds the run (`jobs_dir`): hidden, with every run in it, from
    #: sandboxed agents; None: `jobs_dir` itself
    jobs_root: Path | None = None
    sandbox: SandboxSupport = field(default_factory=sandbox_support)
    watch: StackWatch = field(default_factory=StackWatch)


@dataclass
class JobHooks:
    """What a job's trials tell the driver while they run, wherever they run."""

    log: Callable[[str], None]  # a job.log line
    on_update: Callable[[TrialResult], None]  # a trial's result.json as it changes
    on_live_cost: Callable[[str, float], None]  # (trial name, USD so far) (§7.13)
    hurry: asyncio.Event  # a second SIGINT/SIGTERM: no more grace periods (§7.6)
    #: (trial name, `provider HTTP 500, 2/4`): an agent retries a provider call
    on_llm_retry: Callable[[str, str], None] = lambda _name, _detail: None
    #: (trial name, `1 in flight, 3.2k tokens, last event 14 s ago`): the live progress
    on_activity: Callable[[str, str], None] = lambda _name, _text: None


async def environment_kind(services: JobServices, planned: PlannedJob) -> EnvironmentKind:
    """How each trial of the job gets its environment and verifier (§5.8); the one place env
    kinds plug in.

    docker env: every selected task's agent layer is built (or found by its digest tag) here,
    before any trial; a failed build is a preflight failure (exit 2) naming the task.
    """
    bin_dir = services.options.buzz_bin_dir
    if services.environment is EnvKind.LOCAL:
        hidden = [services.state.paths.root, services.jobs_root or services.jobs_dir]
        socket_dir = services.stack.database_socket_dir
        hidden += [socket_dir] if socket_dir is not None else []
        return LocalKind(bin_dir, local_launcher(services.sandbox, bin_dir, hidden=hidden))
    return DockerKind(
        await task_images(services.state.paths, planned.tasks),
        job_name=planned.name,
        overrides=services.condition.manifest.environment,
        buzz_bin_dir=bin_dir,
        keep_containers=services.options.keep_containers,
    )


@asynccontextmanager
async def job_context(
    services: JobServices, planned: PlannedJob, hooks: JobHooks
) -> AsyncIterator[JobContext]:
    """The services the job's trials share, open for the job and closed after it."""
    environments = await environment_kind(services, planned)
    registry = Registry(services.stack.database_url)
    await registry.open()
    stable_clients = ClientPool(services.stack.relay_ws_url)
    watch = services.watch
    watch.after_restart.append(registry.reopen)
    watch.listeners.append(hooks.log)
    try:
        yield JobContext(
            job_name=planned.name,
            job_paths=JobPaths.of(services.jobs_dir, planned.name),
            condition=services.condition,
            stack=services.stack,
            environments=environments,
            state=services.state,
            options=services.options,
            api_keys=services.api_keys,
            stable_clients=stable_clients,
            registry=registry,
            oracle=services.oracle,
            log=hooks.log,
            on_trial_update=hooks.on_update,
            on_live_cost=hooks.on_live_cost,
            on_llm_retry=hooks.on_llm_retry,
            on_activity=hooks.on_activity,
            hurry=hooks.hurry,
            watch=watch,
            launched_secrets=services.launched_secrets,
        )
    finally:
        watch.after_restart.remove(registry.reopen)
        watch.listeners.remove(hooks.log)
        if services.oracle.server is not None:
            hooks.log(
                f"oracle: {services.oracle.server.unauthorized_requests} unauthorized request(s)"
            )
        await stable_clients.close()
        await registry.close()
