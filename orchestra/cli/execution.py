"""`--executor`, `--ray-address`, `--ray-slots-per-node` on `benchmark` and `resume`
(scale-out.md §1): the options, the executor they make, and what they add to preflight, the dry
run and the printed resume command. The executor is not part of the replay identity (§2.5):
a run may be resumed under either one.

Ray is imported only when `--executor ray` is asked for (the `ray` extra is optional).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

import typer

from orchestra.cli.errors import fail
from orchestra.documents.enums import ExecutorKind
from orchestra.executors.cluster import RayOptions
from orchestra.jobs.executor import Executor, LocalExecutor, TrialFunction
from orchestra.jobs.layout import orchestrator_version
from orchestra.stack.info import StackInfo
from orchestra.stack.select import Modes, per_node_stack_info, running_stack
from orchestra.stack.state import BenchmarkState
from orchestra.stack.watch import StackWatch, watching
from orchestra.trial.run import run_trial


class ExecutorChoice(StrEnum):
    local = "local"
    ray = "ray"


ExecutorOption = Annotated[
    ExecutorChoice,
    typer.Option(
        "--executor",
        help="Where trials run: local (this process) or ray (the nodes of a Ray cluster that "
        "offer buzz_trial slots; needs the ray extra).",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="ADDR",
        help="--executor ray: the cluster to join (ray.init address).  "
        "[default: $RAY_ADDRESS, else auto]",
    ),
]
RaySlotsPerNode = Annotated[
    int | None,
    typer.Option(
        "--ray-slots-per-node",
        min=1,
        metavar="N",
        help="--executor ray, development only: start a throwaway one-node local cluster with "
        "N buzz_trial slots instead of joining one.",
    ),
]


@dataclass(frozen=True)
class Execution:
    """Where this command runs its trials (`ray` None: locally)."""

    ray: RayOptions | None = None
    #: what runs each trial, on either executor: the real one, or bench/scale.py's stub
    trial: TrialFunction = run_trial

    @property
    def kind(self) -> ExecutorKind:
        return ExecutorKind.LOCAL if self.ray is None else ExecutorKind.RAY

    def stack_choice(self, stack: str, env: str, relay_url: str | None) -> str:
        """`--stack auto` under Ray is each node's embedded stack (scale-out.md §4), unless
        the environment or a relay URL asks for another."""
        if self.ray is None or stack != "auto" or relay_url is not None or env == "docker":
            return stack
        return "embedded"

    def resume_args(self) -> list[str]:
        """What `orchestra resume` needs to run the rest the same way."""
        if self.ray is None:
            return []
        args = ["--executor", "ray"]
        if self.ray.address is not None:
            args += ["--ray-address", self.ray.address]
        if self.ray.slots_per_node is not None:
            args += ["--ray-slots-per-node", str(self.ray.slots_per_node)]
        return args


def execution_of(
    executor: ExecutorChoice, ray_address: str | None, ray_slots_per_node: int | None
) -> Execution:
    """The options as one value (exit 1 on a Ray option without `--executor ray`)."""
    if executor is ExecutorChoice.local:
        if ray_address is not None:
            fail("--ray-address goes with --executor ray")
        if ray_slots_per_node is not None:
            fail("--ray-slots-per-node goes with --executor ray")
        return Execution()
    if ray_address is not None and ray_slots_per_node is not None:
        fail("--ray-slots-per-node starts a local cluster; it cannot go with --ray-address")
    return Execution(RayOptions(ray_address, ray_slots_per_node))


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
    *,
    relay_port: int,
    relay_url: str | None,
    database_url: str | None,
    fresh: bool,
) -> AsyncIterator[tuple[StackInfo, StackWatch]]:
    """The stack the command's trials use and its watch: the local executor's is started and
    watched here; under Ray each node host runs and watches its own (scale-out.md §4), and the
    jobs record what such a stack is."""
    if execution.ray is not None:
        yield per_node_stack_info(modes, relay_port, relay_url, database_url), StackWatch()
        return
    async with (
        running_stack(
            modes,
            state,
            relay_port=relay_port,
            relay_url=relay_url,
            database_url=database_url,
            fresh=fresh,
        ) as stack,
        watching(stack, _warn) as watch,
    ):
        yield stack.info, watch


def _warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr, flush=True)
