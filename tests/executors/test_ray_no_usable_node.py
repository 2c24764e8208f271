"""A job whose every slot-offering node refuses trials (its stack cannot start) ends instead of
waiting: Ray would hold a trial that excludes every node until some node joins, which on a
one-node cluster is never. Uses the throwaway one-node cluster of `--ray-slots-per-node`, whose
node host inherits the driver's `ORCHESTRA_NODE_DIR`."""

import json
import os
import re
import subprocess
from pathlib import Path

from orchestra_run import PROJECT_ROOT
from ray_cluster import RUN_TIMEOUT_SECONDS, benchmark, job_dir, results

from orchestra.executors.node_host import NODE_DIR_VARIABLE


def test_a_job_whose_only_node_refuses_trials_ends_with_every_trial_stack_unavailable(
    tmp_path: Path,
) -> None:
    command = benchmark(
        tmp_path, "refused", "--executor", "ray", "--ray-slots-per-node", "2",
        "--path", str(PROJECT_ROOT / "tasks" / "buzz-native" / "user-mention"), "-k", "2",
        "-n", "2",
    )  # fmt: skip
    environment = {**os.environ, NODE_DIR_VARIABLE: "/proc/no-such-dir"}  # nothing can go there
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS, env=environment
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    job = job_dir(tmp_path, "refused")
    trials = list(results(job).values())
    assert [t["status"] for t in trials] == ["error", "error"]
    reruns = [json.loads(p.read_text()) for p in job.glob(".superseded/*/result.json")]
    messages = [t["exception_info"]["exception_message"] for t in trials + reruns]
    assert {t["exception_info"]["exception_type"] for t in trials + reruns} == {"StackUnavailable"}
    assert any(re.match(r"the stack of node \S+ \(\w{8}\) did not start: ", m) for m in messages)
    assert any(m.startswith("no node can take the trial: the stack failed on every node with buzz_trial slots (") for m in messages)  # fmt: skip
