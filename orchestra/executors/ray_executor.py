"""`--executor ray`: a job's trials on a Ray cluster's nodes (scale-out.md).

Ray schedules, the driver submits and collects: each trial is a Ray task asking for one
`buzz_trial` slot (and no CPU); on whichever node Ray places it, it hands the trial to that
node's `NodeHost` (one per node and job, created by the driver and pinned to its node), which
runs it and returns its result and its packed directory. The driver installs that directory
(`install`), streams phase changes to the job's progress through an `UpdateSink` actor, and
turns a node's death into `NodeLost` for exactly the trials that were on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import ray
from ray.exceptions import ActorUnavailableError, RayError, RayTaskError
from ray.util.scheduling_strategies import (
    NodeAffinitySchedulingStrategy,
    NodeLabelSchedulingStrategy,
    NotIn,
)

from orchestra.config.task import Task
from orchestra.documents.enums import ErrorType, ExecutorKind, StackMode
from orchestra.documents.trial import (
    NodeRecord,
    RetriedAttempt,
    TaskRecord,
    TrialIdentity,
    TrialResult,
)
from orchestra.executors.cluster import (
    NAMESPACE,
    SLOT_RESOURCE,
    mailbox_node,
    slot_node_ids,
    slot_nodes,
)
from orchestra.executors.install import InstallError, install_failure, install_trial
from orchestra.executors.node_host import NodeHost, NodeSetup, TrialRequest, TrialReturn
from orchestra.executors.packing import MAX_PACKED_TRIAL_BYTES, pack_directory
from orchestra.jobs.executor import JobTrials, TrialFunction
from orchestra.jobs.plan import PlannedJob
from orchestra.jobs.services import JobHooks, JobServices
from orchestra.jsonio import utc_timestamp
from orchestra.paths import JobPaths
from orchestra.stack.select import Modes
from orchestra.stack.state import state_secrets
from orchestra.trial.errors import uncancel
from orchestra.trial.run import run_trial
from orchestra.trial.state import TrialNaming

#: the node hosts' own calls (a trial's run, cancel, …) all run on their event loop at once
HOST_CONCURRENCY = 10_000
#: how long the driver waits before it asks an unreachable mailbox again
MAILBOX_RETRY_SECONDS = 0.2


class NoNodeHost(Exception):
    """A trial landed on a node that joined after the job started: it has no host yet."""

    def __init__(self, node_id: str) -> None:
        super().__init__(node_id)
        self.node_id = node_id


def host_name(job_key: str, node_id: str) -> str:
    return f"buzz-node-{job_key}-{node_id}"


def run_on_node(job_key: str, request: TrialRequest) -> TrialReturn:
    """The Ray task of one trial: hand it to the host of the node Ray placed it on."""
    node_id = ray.get_runtime_context().get_node_id()
    try:
        host = ray.get_actor(host_name(job_key, node_id), namespace=NAMESPACE)
    except ValueError:
        raise NoNodeHost(node_id) from None
    result: Any = ray.get(host.run.remote(request))
    return cast(TrialReturn, result)


class UpdateSink:
    """The driver's mailbox (a Ray actor on the head node): node hosts put messages, the driver
    takes them in batches, waiting while there are none. Each take acknowledges the messages
    the driver has received, so a take whose reply was lost (`ActorUnavailableError`: "may or
    may not have been executed") is asked again without losing or repeating a message."""

    def __init__(self) -> None:
        self._messages: list[tuple[Any, ...]] = []
        self._acknowledged = 0  # messages received by the driver before `_messages[0]`
        self._arrived = asyncio.Event()

    async def put(self, message: tuple[Any, ...]) -> None:
        self._messages.append(message)
        self._arrived.set()

    async def take(self, received: int) -> tuple[int, list[tuple[Any, ...]]]:
        """The messages after the first `received`, and how many there are then."""
        del self._messages[: received - self._acknowledged]
        self._acknowledged = received
        while not self._messages:
            self._arrived.clear()
            await self._arrived.wait()
        return received + len(self._messages), list(self._messages)


@dataclass
class Flight:
    """A trial in flight, as the driver knows it."""

    identity: TrialIdentity
    started_at: str
    retried_from: list[RetriedAttempt]  # the slot's earlier attempts, which its result lists
    node: NodeRecord | None = None
    latest: TrialResult | None = None

    def last_seen(self) -> TrialResult:
        if self.latest is not None:
            return self.latest
        starting = TrialResult.starting(self.identity, self.started_at)
        return starting.model_copy(update={"retried_from": self.retried_from})


@dataclass(frozen=True)
class RayExecutor:
    """Satisfies `orchestra.jobs.executor.Executor` (connect first: `cluster.connect`)."""

    trial: TrialFunction = run_trial
    max_packed_bytes: int = MAX_PACKED_TRIAL_BYTES
    kind: ExecutorKind = ExecutorKind.RAY

    @asynccontextmanager
    async def open_job(
        self, services: JobServices, planned: PlannedJob, hooks: JobHooks
    ) -> AsyncIterator[JobTrials]:
        setup = await asyncio.to_thread(self._setup, services, planned)
        here = await asyncio.to_thread(mailbox_node)
        sink: Any = (
            ray.remote(UpdateSink)
            .options(
                num_cpus=0,
                max_concurrency=HOST_CONCURRENCY,
                # hard: a soft affinity lets Ray place it on a worker node, lost with it
                scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
            )
            .remote()
        )
        trials = RayTrials(setup, sink, hooks, JobPaths.of(services.jobs_dir, planned.name))
        for node in await asyncio.to_thread(slot_nodes):
            trials.add_host(node.record)
        background = [
            asyncio.create_task(trials.pump(), name="ray-updates"),
            asyncio.create_task(trials.forward_hurry(), name="ray-hurry"),
        ]
        try:
            yield trials
        finally:
            for task in background:
                task.cancel()
            for task in background:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await trials.close()
            ray.kill(sink)

    def _setup(self, services: JobServices, planned: PlannedJob) -> NodeSetup:
        condition = services.condition
        artifacts = {
            ref.path: (condition.artifact_root / ref.path).read_bytes()
            for entry in condition.manifest.roster
            for _, ref in entry.artifacts()
        }
        stack = services.stack
        external = stack.mode is StackMode.EXTERNAL
        return NodeSetup(
            job_name=planned.name,
            job_key=uuid.uuid4().hex[:12],
            layer=planned.layer,
            attempts=planned.attempts,
            tasks={t.name: (t.dir.name, pack_directory(t.dir)) for t in planned.tasks},
            condition=condition,
            artifacts=artifacts,
            modes=Modes(stack.mode, services.environment),
            relay_url=stack.relay_ws_url if external else None,
            database_url=stack.database_url if external else None,
            secrets=state_secrets(services.state),
            options=services.options,
            api_keys=services.api_keys,
            trial=self.trial,
            max_packed_bytes=self.max_packed_bytes,
        )


@dataclass
class RayTrials:
    """One job's trials on the cluster (satisfies `orchestra.jobs.executor.JobTrials`)."""

    setup: NodeSetup
    sink: Any
    hooks: JobHooks
    paths: JobPaths
    hosts: dict[str, Any] = field(default_factory=dict)  # node id -> NodeHost handle
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)  # nodes whose stack failed: no more trials
    flights: dict[str, Flight] = field(default_factory=dict)  # by trial name

    def add_host(self, node: NodeRecord) -> None:
        self.nodes[node.node_id] = node
        self.hosts[node.node_id] = (
            ray.remote(NodeHost)
            .options(
                name=host_name(self.setup.job_key, node.node_id),
                namespace=NAMESPACE,
                num_cpus=0,
                max_restarts=0,
                max_concurrency=HOST_CONCURRENCY,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
            )
            .remote(self.setup, self.sink, node)
        )

    async def run(
        self, task: Task, attempt: int, retried_from: Sequence[RetriedAttempt]
    ) -> TrialResult:
        naming = TrialNaming.fresh(task)
        condition = self.setup.condition
        identity = TrialIdentity(
            trial_id=naming.trial_id,
            trial_name=naming.name,
            job_name=self.setup.job_name,
            task_name=task.name,
            short_name=task.short_name,
            layer=task.layer,
            attempt=attempt,
            condition=condition.name,
            manifest_sha256=condition.manifest_sha256,
        )
        flight = Flight(identity, utc_timestamp(), list(retried_from))
        self.flights[naming.name] = flight
        self.hooks.on_update(flight.last_seen())  # the job's result.json: running
        request = TrialRequest(
            task.name,
            attempt,
            [earlier.model_dump(mode="json") for earlier in retried_from],
            naming.trial_id,
            naming.name,
        )
        try:
            return await self._run(request, flight, TaskRecord.model_validate(task.record()))
        finally:
            del self.flights[naming.name]

    async def _run(self, request: TrialRequest, flight: Flight, task: TaskRecord) -> TrialResult:
        while True:
            if self.refused and not await asyncio.to_thread(self._takers):
                # Ray would hold the task until a node joins, which may be never
                refused = ", ".join(sorted(self.nodes[n].label for n in self.refused))
                message = (
                    "no node can take the trial: the stack failed on every node with "
                    f"{SLOT_RESOURCE} slots ({refused})"
                )
                return self._failed(flight, ErrorType.STACK_UNAVAILABLE, message)
            try:
                returned = await self._wait(self._submit(request), request.trial_name)
            except RayTaskError as error:
                cause = error.cause
                if isinstance(cause, NoNodeHost) and cause.node_id not in self.hosts:
                    joined = [n for n in slot_nodes() if n.record.node_id == cause.node_id]
                    if joined:  # a node that joined after the job started: give it a host
                        self.add_host(joined[0].record)
                        continue
                    return self._lost(flight, cause)
                if isinstance(cause, RayError):  # the node host died under the task
                    return self._lost(flight, cause)
                message = f"the trial failed on its node: {type(cause).__name__}: {cause}"
                return self._failed(flight, ErrorType.INTERNAL_ERROR, message)
            except RayError as error:  # the task's worker or node died
                return self._lost(flight, error)
            return self._finish(flight, returned, task)

    def _takers(self) -> set[str]:
        """The live slot-offering nodes whose stack has not failed in this job."""
        return slot_node_ids() - self.refused

    def _submit(self, request: TrialRequest) -> Any:
        strategy: Any = "DEFAULT"
        if self.refused:
            not_in: Any = NotIn  # untyped
            strategy = NodeLabelSchedulingStrategy(hard={"ray.io/node-id": not_in(*self.refused)})
        return (
            ray.remote(run_on_node)
            .options(
                num_cpus=0,
                resources={SLOT_RESOURCE: 1},
                max_retries=0,
                scheduling_strategy=strategy,
            )
            .remote(self.setup.job_key, request)
        )

    async def _wait(self, ref: Any, trial_name: str) -> TrialReturn:
        """The task's outcome; a cancellation of the caller cancels the trial on its node,
        whose `cancelled` result is still awaited (§7.6)."""
        future = asyncio.wrap_future(ref.future())
        while True:
            try:
                returned: TrialReturn = await asyncio.shield(future)
                return returned
            except asyncio.CancelledError:
                if future.done():
                    raise
                for host in self.hosts.values():
                    host.cancel.remote(trial_name)
                uncancel()

    def _finish(self, flight: Flight, returned: TrialReturn, task: TaskRecord) -> TrialResult:
        node = flight.node = returned.node
        if returned.refused is not None:
            self.refused.add(node.node_id)
            return self._failed(flight, ErrorType.STACK_UNAVAILABLE, returned.refused)
        assert returned.result is not None
        result = TrialResult.model_validate(returned.result)
        if returned.packed is None:
            message = (
                f"the packed trial directory exceeds {self.setup.max_packed_bytes} bytes; "
                f"it is kept on its node at {returned.kept_at}"
            )
            flight.latest = result
            return self._failed(flight, ErrorType.TRIAL_ARTIFACTS_TOO_LARGE, message)
        try:
            final = install_trial(self.paths, result, returned.packed, task, node)
        except InstallError as error:
            flight.latest = result
            return self._failed(flight, ErrorType.INTERNAL_ERROR, str(error))
        self.hosts[node.node_id].discard.remote(result.trial_name)
        self.hooks.on_update(final)
        return final

    def _lost(self, flight: Flight, error: BaseException) -> TrialResult:
        where = f"node {flight.node.label}" if flight.node else "its node"
        message = f"{where} was lost with the trial in flight ({type(error).__name__})"
        return self._failed(flight, ErrorType.NODE_LOST, message)

    def _failed(self, flight: Flight, error_type: ErrorType, message: str) -> TrialResult:
        self.hooks.log(f"trial {flight.identity.trial_name}: {error_type}: {message}")
        final = install_failure(self.paths, flight.last_seen(), error_type, message, flight.node)
        self.hooks.on_update(final)
        return final

    # --- messages from the nodes ---------------------------------------------------------

    async def pump(self) -> None:
        received = 0
        while True:
            try:
                received, batch = await self.sink.take.remote(received)
            except ActorUnavailableError:  # a transient RPC failure: ask again
                await asyncio.sleep(MAILBOX_RETRY_SECONDS)
                continue
            except RayError as error:  # the head is gone: the trials' returns still come
                self.hooks.log(
                    f"progress from the nodes stopped: the mailbox was lost ({type(error).__name__})"
                )
                return
            for message in batch:
                self._receive(message)

    def _receive(self, message: tuple[Any, ...]) -> None:
        kind, *payload = message
        if kind == "log":
            self.hooks.log(payload[0])
        elif kind == "started":
            name, node_id, hostname = payload
            if name in self.flights:
                self.flights[name].node = NodeRecord(node_id=node_id, hostname=hostname)
        elif kind == "cost":
            name, cost = payload
            if name in self.flights:
                self.hooks.on_live_cost(name, cost)
        elif kind == "result":
            result = TrialResult.model_validate(payload[0])
            flight = self.flights.get(result.trial_name)
            # the final result comes with the directory; a late phase change is stale
            if flight is None or result.status.terminal:
                return
            result = result.model_copy(update={"node": flight.node})
            flight.latest = result
            self.hooks.on_update(result)

    async def forward_hurry(self) -> None:
        await self.hooks.hurry.wait()
        for host in self.hosts.values():
            host.hurry.remote()

    async def close(self) -> None:
        """Stop every node's stack and its host (a lost node's host is gone already)."""
        closing = [host.close.remote() for host in self.hosts.values()]
        for ref in closing:
            with contextlib.suppress(RayError):
                for line in await ref:
                    self.hooks.log(line)
        for host in self.hosts.values():
            with contextlib.suppress(RayError):
                ray.kill(host)
