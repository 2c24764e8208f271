"""Helpers of the Ray executor tests: a real multi-node Ray cluster on this machine
(`ray.cluster_utils.Cluster`: a head with no `buzz_trial` slot and worker nodes with slots, each
node its own raylet with its own worker processes), and running `orchestra` against it.

* `RayCluster`: `.address`, `.node_dir` (every node host's directory: `ORCHESTRA_NODE_DIR` of the
  workers), `.workers` (node ids), `add_worker(slots, node_dir=None) -> node id`,
  `remove_worker(node id)`.
* `node_trials(node_dir, node_id)`: the trial directories a node host runs or ran.
"""

import json
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from orchestra_run import orchestra_command, processes_naming
from ray.cluster_utils import Cluster

from orchestra.executors.node_host import NODE_DIR_VARIABLE

#: Each worker runs one trial at a time: two workers, two trials in flight, one on each.
SLOTS_PER_WORKER = 1
RUN_TIMEOUT_SECONDS = 400


@dataclass
class RayCluster:
    cluster: Cluster
    node_dir: Path
    nodes: dict[str, Any] = field(default_factory=dict)  # node id -> its cluster_utils node

    @classmethod
    def start(cls, workers: int) -> "RayCluster":
        # outside pytest's 0700 temp tree (the embedded PostgreSQL runs as another user under
        # root) and short (its Unix socket lives under it)
        node_dir = Path(tempfile.mkdtemp(prefix="buzz-nodes-", dir="/tmp"))
        node_dir.chmod(0o755)
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        running = cls(cluster, node_dir)
        for _ in range(workers):
            running.add_worker(SLOTS_PER_WORKER)
        return running

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    @property
    def workers(self) -> list[str]:
        return list(self.nodes)

    def add_worker(self, slots: int, node_dir: str | None = None) -> str:
        """A worker node with `slots` (its node hosts' directories in `node_dir`, default
        the cluster's)."""
        node = self.cluster.add_node(
            num_cpus=1,
            resources={"buzz_trial": slots},
            env_vars={NODE_DIR_VARIABLE: node_dir or str(self.node_dir)},
        )
        self.cluster.wait_for_nodes()
        self.nodes[node.node_id] = node
        return str(node.node_id)

    def remove_worker(self, node_id: str) -> None:
        self.cluster.remove_node(self.nodes.pop(node_id), allow_graceful=False)

    def shutdown(self) -> None:
        self.cluster.shutdown()
        for process in processes_naming(str(self.node_dir)):
            process.kill()
        shutil.rmtree(self.node_dir, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_trials(node_dir: Path, node_id: str) -> list[Path]:
    """The trial directories under the node hosts of `node_id` (any job)."""
    return sorted(node_dir.glob(f"*-{node_id[:12]}/jobs/*/*/result.json"))


def node_processes(node_dir: Path) -> list[str]:
    """The stack and agent processes of the node hosts (not the Ray workers themselves, whose
    environment names the node dir too)."""
    return [
        f"{p.pid}: {' '.join(p.cmdline())[:120]}"
        for p in processes_naming(str(node_dir))
        if not _is_ray_process(p)
    ]


#: What the command lines of Ray's own processes (raylets, workers, GCS, …) contain.
RAY_MARKS = ("/ray/_private/", "/ray/core/src/", "ray::", "/ray/dashboard/", "/ray/autoscaler/")


def _is_ray_process(process: psutil.Process) -> bool:
    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return False
    return any(mark in command for mark in RAY_MARKS)


def job_dir(scratch: Path, name: str) -> Path:
    return scratch / "jobs" / name / name  # `--job-name`: the run and its one job


def results(job: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(job.glob("*/result.json")):
        document = json.loads(path.read_text())
        found[f"{document['short_name']}#{document['attempt']}"] = document
    return found


def benchmark(scratch: Path, job_name: str, *args: str) -> list[str]:
    """The `orchestra benchmark` command of one job (oracle, local env) in `scratch`."""
    return orchestra_command(
        "benchmark", "--env", "local", "--jobs-dir", str(scratch / "jobs"),
        "--state-dir", str(scratch / "state"), "--job-name", job_name, *args,
    )  # fmt: skip


def ray_benchmark(cluster: RayCluster, scratch: Path, job_name: str, *args: str) -> list[str]:
    """`benchmark` on the cluster."""
    return benchmark(
        scratch, job_name, "--executor", "ray", "--ray-address", cluster.address, *args
    )


def run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS)
