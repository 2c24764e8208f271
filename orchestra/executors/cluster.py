"""The Ray cluster a run uses: importing the optional extra, connecting, the nodes that offer
`buzz_trial` slots, and the preflight checks on them (scale-out.md §1, §3, §6)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from orchestra.documents.trial import NodeRecord
from orchestra.errors import OrchestraError
from orchestra.jobs import layout
from orchestra.jobs.layout import orchestrator_version

#: The custom resource a node declares at `ray start --resources '{"buzz_trial": N}'` (§3).
SLOT_RESOURCE = "buzz_trial"
#: The Ray namespace of the node hosts, so the trial tasks find their node's host by name.
NAMESPACE = "buzz-orchestra"
RAY_EXTRA_HINT = "pip install 'buzz-orchestra[ray]'"
#: How long an address given as HOST:PORT may take to accept a connection (ray.init itself
#: retries for a minute before it gives up).
CONNECT_SECONDS = 5.0
#: What Ray's core logs when the cluster demands an auth token the driver does not present.
AUTH_REFUSED = "InvalidAuthToken"
TOKEN_HINT = (
    "the cluster uses Ray token authentication and refused this driver's token: set "
    "RAY_AUTH_MODE=token and the cluster's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
    "~/.ray/auth_token) here, as on every node (docs/scale-out.md, Token authentication)"
)


class RayMissing(OrchestraError):
    """`--executor ray` without the `ray` extra (exit 1)."""


class ClusterUnavailable(OrchestraError):
    """The cluster cannot be reached, offers no slot, or runs another version (exit 2)."""

    exit_code = 2


def import_ray() -> ModuleType:
    """The `ray` module, or `RayMissing` naming the extra."""
    try:
        import ray
    except ImportError:
        raise RayMissing(
            f"--executor ray needs the ray extra, which is not installed: {RAY_EXTRA_HINT}"
        ) from None
    return ray


def cluster_address(given: str | None) -> str:
    """`--ray-address`, else `$RAY_ADDRESS`, else `auto` (§1)."""
    return given or os.environ.get("RAY_ADDRESS") or "auto"


@dataclass(frozen=True)
class RayOptions:
    """`--executor ray`'s options: `address` as given (None: `$RAY_ADDRESS` or `auto`);
    `slots_per_node`: start a throwaway one-node cluster in this process with that many slots
    (development only; a real cluster declares its slots at `ray start`)."""

    address: str | None = None
    slots_per_node: int | None = None

    @property
    def shown_address(self) -> str:
        return "a local cluster" if self.slots_per_node else cluster_address(self.address)


def connect(options: RayOptions) -> None:
    """Join the cluster (or start the throwaway local one); `ClusterUnavailable` naming the
    address when it cannot be reached."""
    ray = import_ray()
    if ray.is_initialized():
        return
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING"}
    if options.slots_per_node is not None:
        ray.init(
            namespace=NAMESPACE,
            resources={SLOT_RESOURCE: options.slots_per_node},
            include_dashboard=False,
            **quiet,
        )
        return
    address = cluster_address(options.address)
    _probe(address)
    with _core_log() as core_log:
        try:
            ray.init(address=address, namespace=NAMESPACE, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as error:
            failure = error
        else:
            return
    # Ray says only "Failed to connect"; the cause, a refused token, is in its core's log
    first = (str(failure).strip().splitlines() or [type(failure).__name__])[0]
    cause = f" ({TOKEN_HINT})" if AUTH_REFUSED in core_log.text else ""
    raise ClusterUnavailable(f"cannot reach the Ray cluster at {address}: {first}{cause}")


@dataclass
class _CapturedLog:
    text: str = ""


@contextlib.contextmanager
def _core_log() -> Iterator[_CapturedLog]:
    """What Ray's C++ core writes to this process's stderr meanwhile (it bypasses `sys.stderr`);
    written on to stderr afterwards, so nothing is hidden."""
    captured = _CapturedLog()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode(errors="replace")
            sys.stderr.write(captured.text)


def _probe(address: str) -> None:
    """A HOST:PORT address must accept a TCP connection within `CONNECT_SECONDS`."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # `auto`, `local`: ray.init answers at once
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ClusterUnavailable(f"cannot reach the Ray cluster at {address}: {reason}") from None


def disconnect() -> None:
    ray = import_ray()
    if ray.is_initialized():
        ray.shutdown()


@dataclass(frozen=True)
class SlotNode:
    """A live node that offers `buzz_trial` slots, and its installed `buzz-orchestra`."""

    record: NodeRecord
    slots: int
    free: int
    version: str


def installed_version() -> str:
    """The version installed where this runs (shipped to each node by reference)."""
    return layout.orchestrator_version()


def slot_nodes() -> list[SlotNode]:
    """Every live node with `buzz_trial` slots, in the cluster's order, with the version a
    task pinned to it reports (a node that dies meanwhile is left out)."""
    ray = import_ray()
    from ray._private import state
    from ray.exceptions import RayError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    per_node: Any = state.available_resources_per_node  # untyped (no public API gives it)
    available = per_node()
    probe = ray.remote(num_cpus=0, max_retries=0)(installed_version)
    offered = []
    for node in _offering(ray.nodes()):
        slots = int(node["Resources"][SLOT_RESOURCE])
        node_id = node["NodeID"]
        pinned = NodeAffinitySchedulingStrategy(node_id, soft=False)
        offered.append((node, slots, probe.options(scheduling_strategy=pinned).remote()))
    nodes = []
    for node, slots, version in offered:
        try:
            installed = ray.get(version)
        except RayError:  # the node is going away (the cluster has not noticed yet)
            continue
        node_id = node["NodeID"]
        free = int(available.get(node_id, {}).get(SLOT_RESOURCE, 0))
        hostname = node.get("NodeManagerHostname") or node.get("NodeManagerAddress") or "?"
        record = NodeRecord(node_id=node_id, hostname=hostname)
        nodes.append(SlotNode(record, slots, free, installed))
    return nodes


def slot_node_ids() -> set[str]:
    """The ids of the live nodes with `buzz_trial` slots (no version probe: cheap)."""
    return {str(node["NodeID"]) for node in _offering(import_ray().nodes())}


def _offering(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in nodes:
        if node.get("Alive") and int(node.get("Resources", {}).get(SLOT_RESOURCE, 0)) > 0:
            yield node


HEAD_RESOURCE = "node:__internal_head__"  # Ray's marker resource of the head node


def mailbox_node() -> str:
    """The node for the driver's mailbox actor: the head (a cluster does not outlive it), else
    the driver's own node. Not simply the driver's: a driver attaches to any raylet on its
    address, which can be a worker node that is then lost with the mailbox on it."""
    ray = import_ray()
    for node in ray.nodes():
        if node.get("Alive") and HEAD_RESOURCE in node.get("Resources", {}):
            return str(node["NodeID"])
    return str(ray.get_runtime_context().get_node_id())


def required_slot_nodes(address: str) -> list[SlotNode]:
    """`slot_nodes`, or `ClusterUnavailable` naming the address when there is none."""
    nodes = slot_nodes()
    if not nodes:
        raise ClusterUnavailable(
            f"the Ray cluster at {address} offers no {SLOT_RESOURCE} slot "
            f"(start nodes with --resources '{{\"{SLOT_RESOURCE}\": N}}')"
        )
    return nodes


def check_cluster(address: str, driver_version: str | None = None) -> list[SlotNode]:
    """Preflight (§6): some node offers a slot, and every such node runs the driver's version
    (`ClusterUnavailable` naming the address, or each node and both versions)."""
    nodes = required_slot_nodes(address)
    mine = driver_version or orchestrator_version()
    wrong = [
        f"node {node.record.label} has buzz-orchestra {node.version}"
        for node in nodes
        if node.version != mine
    ]
    if wrong:
        raise ClusterUnavailable(
            f"version mismatch on the Ray cluster at {address}: {'; '.join(wrong)}, "
            f"the driver has {mine}"
        )
    return nodes


def describe_cluster(address: str, nodes: list[SlotNode], driver_version: str) -> str:
    """`--dry-run --executor ray`: the nodes, their free slots and the version check."""
    lines = [f"Ray cluster    {address}: {len(nodes)} node(s) with {SLOT_RESOURCE} slots"]
    for node in nodes:
        check = "ok" if node.version == driver_version else f"MISMATCH (driver {driver_version})"
        lines.append(
            f"  node {node.record.label}: {node.free} of {node.slots} slot(s) free, "
            f"buzz-orchestra {node.version} {check}"
        )
    return "\n".join(lines) + "\n"
