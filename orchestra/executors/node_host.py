"""`NodeHost`: one Ray actor per node and job that runs the job's trials on its node
(scale-out.md §2).

It owns what a trial needs there, built as the local executor builds it (`job_context`): the
node's own stack (embedded by default, in the node's directory, on a free port; §4), the oracle
server, the registry and the relay clients. A trial runs the same trial function as locally, in
a node-local job directory with the jobs directory's layout; its phase changes, the job log
lines and live costs stream to the driver's `UpdateSink`, and the finished trial directory goes
back packed. The stack starts with the node's first trial.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestra.config.condition import Condition
from orchestra.config.task import Task, load_task
from orchestra.documents.job import PlanLayer
from orchestra.documents.run_config import TrialSettings
from orchestra.documents.trial import NodeRecord, RetriedAttempt, TrialResult
from orchestra.executors.packing import PackTooLarge, pack_directory, unpack_directory
from orchestra.jobs.executor import TrialFunction
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.services import JobHooks, JobServices, job_context
from orchestra.paths import DEFAULT_NODE_ROOT, JobPaths, NodePaths
from orchestra.stack.embedded import RELAY_HOST
from orchestra.stack.ports import free_port
from orchestra.stack.select import Modes, running_stack
from orchestra.stack.state import seeded_state
from orchestra.stack.watch import watching
from orchestra.trial.context import JobContext
from orchestra.trial.state import TrialNaming

#: Where a node keeps its node hosts' directories (set on the node, e.g. at `ray start`).
NODE_DIR_VARIABLE = "ORCHESTRA_NODE_DIR"
#: (kind, payload…) tuples the node hosts put into the driver's sink
Message = tuple[Any, ...]


@dataclass(frozen=True)
class NodeSetup:
    """What every node host of a job is given once (by value: the driver's disk may be the only
    place the tasks and artifacts live). `secrets` seeds the node's state dir, so the node's
    stack and the derived fixture identities are the driver's (§4); never printed."""

    job_name: str
    job_key: str  # unique per job execution: names the node hosts and their directories
    layer: PlanLayer
    attempts: int
    tasks: dict[str, tuple[str, bytes]]  # task name -> (directory name, packed directory)
    condition: Condition
    artifacts: dict[str, bytes]  # manifest artifact path -> its bytes
    modes: Modes
    relay_url: str | None  # external stack only
    database_url: str | None
    secrets: dict[str, str] = dataclasses.field(repr=False)
    options: TrialSettings
    api_keys: dict[str, str] = dataclasses.field(repr=False)
    trial: TrialFunction
    max_packed_bytes: int


@dataclass(frozen=True)
class TrialRequest:
    task_name: str
    attempt: int
    retried_from: list[dict[str, Any]]  # RetriedAttempt documents
    trial_id: str
    trial_name: str


@dataclass(frozen=True)
class TrialReturn:
    """A trial's end on its node: its final `result.json` and its packed directory, or why
    there is no directory (`kept_at`: too large, kept on the node) or no trial at all
    (`refused`: the node's stack is unavailable; the node takes no more trials)."""

    node: NodeRecord
    result: dict[str, Any] | None
    packed: bytes | None = None
    kept_at: str | None = None
    refused: str | None = None


class NodeHost:
    """Made a Ray actor by the executor (`ray.remote(NodeHost)`); one event loop serves every
    call, so trials run concurrently as on the local executor."""

    def __init__(self, setup: NodeSetup, sink: Any, node: NodeRecord) -> None:
        self.setup = setup
        self.sink = sink
        self.node = node
        root = Path(os.environ.get(NODE_DIR_VARIABLE) or DEFAULT_NODE_ROOT)
        self.paths = NodePaths.of(root, setup.job_key, node.node_id)
        self._exit = AsyncExitStack()
        self._opened: asyncio.Task[tuple[JobContext, dict[str, Task]]] | None = None
        self._running: dict[str, asyncio.Task[TrialResult]] = {}
        self._cancelled: set[str] = set()  # asked to cancel before or while running
        self._hurry = asyncio.Event()
        self._refusal: str | None = None
        self._closing: list[str] | None = None  # job.log lines while closing

    # --- what the driver calls -----------------------------------------------------------

    async def run(self, request: TrialRequest) -> TrialReturn:
        name = request.trial_name
        self._send("started", name, self.node.node_id, self.node.hostname)
        refusal = await self._usable()
        if refusal is not None:
            return TrialReturn(self.node, None, refused=refusal)
        assert self._opened is not None
        ctx, tasks = self._opened.result()
        retried = [RetriedAttempt.model_validate(r) for r in request.retried_from]
        naming = TrialNaming(request.trial_id, name)
        trial = asyncio.create_task(
            self.setup.trial(ctx, tasks[request.task_name], request.attempt, retried, naming)
        )
        self._running[name] = trial
        if name in self._cancelled:
            await asyncio.sleep(0)  # let the trial start: a cancellation then ends it cancelled
            trial.cancel()
        try:
            result = await trial
        finally:
            self._running.pop(name, None)
        return await self._packed(result)

    def cancel(self, trial_name: str) -> None:
        """Cancel the trial (§7.6): it stops, finalizes and returns `cancelled`."""
        self._cancelled.add(trial_name)
        trial = self._running.get(trial_name)
        if trial is not None:
            trial.cancel()

    def hurry(self) -> None:
        """A second signal: no more grace periods."""
        self._hurry.set()

    def discard(self, trial_name: str) -> None:
        """The driver installed the trial: its node-local directory goes."""
        shutil.rmtree(self._trial_dir(trial_name), ignore_errors=True)

    async def close(self) -> list[str]:
        """Stop the node's stack and oracle (the job is over); the job.log lines that
        stopping wrote (returned, not sent: they must reach the log before the job ends)."""
        self._closing = []
        for trial in list(self._running.values()):
            trial.cancel()
        await self._exit.aclose()
        return self._closing

    # --- the node's services -----------------------------------------------------------------

    async def _usable(self) -> str | None:
        """None when the node can run a trial; otherwise why not (its stack failed)."""
        if self._opened is None:
            self._opened = asyncio.create_task(self._open())
        try:
            ctx, _ = await asyncio.shield(self._opened)
        except Exception as error:
            self._refusal = self._refusal or (
                f"the stack of node {self.node.label} did not start: "
                f"{type(error).__name__}: {error}"
            )
            return self._refusal
        if ctx.watch.failure is not None:
            return f"the stack of node {self.node.label} is unavailable: {ctx.watch.failure}"
        return None

    async def _open(self) -> tuple[JobContext, dict[str, Task]]:
        setup, paths = self.setup, self.paths
        tasks = await asyncio.to_thread(self._unpack_tasks)
        condition = await asyncio.to_thread(self._condition)
        state = seeded_state(paths.state_dir, setup.secrets)
        # an embedded relay takes a free port of its node; docker and external ones have theirs
        stack = await self._exit.enter_async_context(
            running_stack(
                setup.modes,
                state,
                relay_port=free_port(RELAY_HOST),
                relay_url=setup.relay_url,
                database_url=setup.database_url,
            )
        )
        watch = await self._exit.enter_async_context(watching(stack))
        services = JobServices(
            condition=condition,
            environment=setup.modes.env,
            stack=stack.info,
            state=state,
            options=setup.options,
            api_keys=setup.api_keys,
            jobs_dir=paths.jobs_dir,
            watch=watch,
        )
        self._exit.push_async_callback(services.oracle.stop)
        planned = PlannedJob(setup.job_name, setup.layer, setup.attempts, tuple(tasks.values()))
        hooks = JobHooks(self._log, self._update, self._live_cost, self._hurry)
        ctx = await self._exit.enter_async_context(job_context(services, planned, hooks))
        self._log(f"stack {stack.info.mode} at {stack.info.relay_ws_url}")
        return ctx, tasks

    def _unpack_tasks(self) -> dict[str, Task]:
        """The job's tasks, unpacked once (a leftover directory of an earlier try is replaced)."""
        tasks: dict[str, Task] = {}
        for name, (directory, packed) in self.setup.tasks.items():
            target = self.paths.tasks_dir / directory
            shutil.rmtree(target, ignore_errors=True)
            unpack_directory(packed, target)
            tasks[name] = load_task(target)
        return tasks

    def _condition(self) -> Condition:
        """The condition with its artifacts read from the copies the driver sent."""
        root = self.paths.artifacts_dir
        for relative, data in self.setup.artifacts.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return dataclasses.replace(self.setup.condition, artifact_root=root)

    # --- a trial's end -------------------------------------------------------------------------

    def _trial_dir(self, trial_name: str) -> Path:
        return JobPaths.of(self.paths.jobs_dir, self.setup.job_name).trial(trial_name).root

    async def _packed(self, result: TrialResult) -> TrialReturn:
        document = result.model_dump(mode="json")
        directory = self._trial_dir(result.trial_name)
        try:
            packed = await asyncio.to_thread(
                pack_directory, directory, limit=self.setup.max_packed_bytes
            )
        except PackTooLarge:
            return TrialReturn(self.node, document, kept_at=f"{self.node.hostname}:{directory}")
        return TrialReturn(self.node, document, packed=packed)

    # --- to the driver -------------------------------------------------------------------------

    def _send(self, *message: Any) -> None:
        self.sink.put.remote(message)

    def _log(self, line: str) -> None:
        line = f"node {self.node.label}: {line}"
        if self._closing is not None:
            self._closing.append(line)
        else:
            self._send("log", line)

    def _update(self, result: TrialResult) -> None:
        self._send("result", result.model_dump(mode="json"))

    def _live_cost(self, trial_name: str, cost_usd: float) -> None:
        self._send("cost", trial_name, cost_usd)
