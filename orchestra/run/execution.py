"""Where a run's trials run (`executor`, `ray_address`, `ray_slots_per_node`; scale-out.md §1):
the executor those options make, what they add to preflight and the dry run, and the stack the
driver's trials use. The executor is not part of the replay identity (§2.5): a run may be
resumed under either one.

Ray is imported only when `--executor ray` is asked for (the `ray` extra is optional).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from orchestra.documents.enums import EnvKind, ExecutorKind, StackMode
from orchestra.documents.run_config import AUTO, RunConfig, StackChoice
from orchestra.executors.cluster import RayOptions
from orchestra.jobs.executor import Executor, LocalExecutor, TrialFunction
from orchestra.jobs.layout import orchestrator_version
from orchestra.stack.info import StackInfo
from orchestra.stack.select import Modes, per_node_stack_info, running_stack
from orchestra.stack.state import BenchmarkState
from orchestra.stack.watch import StackWatch, watching
from orchestra.trial.run import run_trial


@dataclass(frozen=True)
class Execution:
    """Where this command runs its trials (`ray` None: locally)."""

    ray: RayOptions | None = None
    #: what runs each trial, on either executor: the real one, or bench/scale.py's stub
    trial: TrialFunction = run_trial

    @property
    def kind(self) -> ExecutorKind:
        return ExecutorKind.LOCAL if self.ray is None else ExecutorKind.RAY

    @classmethod
    def of(cls, config: RunConfig, trial: TrialFunction = run_trial) -> Execution:
        if config.executor is ExecutorKind.LOCAL:
            return cls(trial=trial)
        return cls(RayOptions(config.ray_address, config.ray_slots_per_node), trial)

    def stack_choice(self, config: RunConfig) -> StackChoice:
        """`--stack auto` under Ray is each node's embedded stack (scale-out.md §4), unless
        the environment or a relay URL asks for another."""
        if (
            self.ray is None
            or config.stack != AUTO
            or config.relay_url is not None
            or config.env is EnvKind.DOCKER
        ):
            return config.stack
        return StackMode.EMBEDDED


def start_executor(execution: Execution) -> Executor:
    """The executor, after its preflight: for Ray, the cluster joined and checked (some node
    offers a slot, every such node runs this version). `RayMissing` (exit 1) without the
    extra, `ClusterUnavailable` (exit 2) naming the address."""
    if execution.ray is None:
        return LocalExecutor(trial=execution.trial)
    from orchestra.executors.cluster import check_cluster, connect, import_ray

    import_ray()
    connect(execution.ray)
    try:
        check_cluster(execution.ray.shown_address)
    except BaseException:
        stop_executor(execution)
        raise
    from orchestra.executors.ray_executor import RayExecutor

    return RayExecutor(trial=execution.trial)


def stop_executor(execution: Execution) -> None:
    if execution.ray is not None:
        from orchestra.executors.cluster import disconnect

        disconnect()


def dry_run_text(execution: Execution) -> str:
    """`--dry-run --executor ray`: the cluster's slot nodes and their version checks (no
    trial is started); empty for the local executor."""
    if execution.ray is None:
        return ""
    from orchestra.executors.cluster import (
        connect,
        describe_cluster,
        import_ray,
        required_slot_nodes,
    )

    import_ray()
    connect(execution.ray)
    address = execution.ray.shown_address
    try:
        return describe_cluster(address, required_slot_nodes(address), orchestrator_version())
    finally:
        stop_executor(execution)


@asynccontextmanager
async def driver_stack(
    execution: Execution,
    modes: Modes,
    state: BenchmarkState,
    config: RunConfig,
) -> AsyncIterator[tuple[StackInfo, StackWatch]]:
    """The stack the command's trials use and its watch: the local executor's is started and
    watched here; under Ray each node host runs and watches its own (scale-out.md §4), and the
    jobs record what such a stack is."""
    if execution.ray is not None:
        stack_info = per_node_stack_info(
            modes, config.relay_port, config.relay_url, config.database_url
        )
        yield stack_info, StackWatch()
        return
    async with (
        running_stack(
            modes,
            state,
            relay_port=config.relay_port,
            relay_url=config.relay_url,
            database_url=config.database_url,
            fresh=config.fresh,
        ) as stack,
        watching(stack, _warn) as watch,
    ):
        yield stack.info, watch


def _warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr, flush=True)
