"""`--executor ray` on a real multi-node Ray cluster on this machine (scale-out.md §8): a head
without `buzz_trial` slots and two workers with one slot each, every node host starting its
own embedded stack (PostgreSQL and relay) in its node's directory.

* Oracle tasks through `--executor ray` score 1.0 with trials on both nodes, and the jobs
  directory matches the local executor's for the same plan field by field, apart from `node`
  and `executor` (and what differs between any two runs: ids, times, token counts).
* The Harbor fixture tasks score on the cluster as in the local env (the Harbor tasks under
  `--executor ray`).
* `--dry-run --executor ray` lists the nodes, their free slots and version checks; a node with
  another version is refused at preflight, naming the node and both versions.
* SIGINT: every in-flight trial `cancelled`, exit 130, no process left on any node, resumable.
* A trial directory that packs larger than the limit (lowered from 512 MiB for the test): the
  trial is `error` `TrialArtifactsTooLarge`, and its node keeps the directory at the recorded path.
* A node whose stack cannot start: its trial is `error` `StackUnavailable` naming the node, and
  the rerun goes elsewhere (the node gets no more trials of the job).
* A node removed mid-run: only its in-flight trial is `error` `NodeLost`; `orchestra resume`
  completes it on the surviving nodes.

One cluster for the module; the last two tests add a node and remove it.
"""

import functools
import json
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import ray
from harbor_support import harbor_dataset, harbor_problems
from orchestra_run import orchestra_command, task_copy, wait_until
from ray_cluster import (
    RUN_TIMEOUT_SECONDS,
    RayCluster,
    benchmark,
    free_port,
    job_dir,
    node_processes,
    node_trials,
    ray_benchmark,
    results,
    run,
)
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.executors import cluster as ray_cluster_module
from orchestra.executors import ray_executor
from orchestra.executors.cluster import ClusterUnavailable, check_cluster
from orchestra.trial.env.sandbox import sandbox_support

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: a regression and a workflow task: the scripted-event and the plain path both cross nodes
TASKS = ("reply-to-thread", "user-mention", "cross-thread-requests")
#: the agent's first model request waits 4 s: a window in which trials are surely in flight
SLOW_ORACLE = {
    "oracle": {"provider": "oracle", "env": {"ORACLE_FAULTS": "slow:1", "ORACLE_SLOW_SECONDS": "4"}}
}
GONE_WITHIN_SECONDS = 15.0
#: Values that differ between any two runs of one plan; their keys must still match.
VOLATILE = frozenset({
    "id", "trial_id", "trial_name", "job_name", "created_at", "started_at", "finished_at",
    "updated_at", "occurred_at", "at", "seconds", "agent_active_seconds", "mean_trial_seconds",
    "active_seconds",
    "pubkey", "channel_id", "channel_name", "task_event_id", "completion_message_id",
    "event_id", "sha256", "evidence_sha256", "input", "output", "cached_input", "jobs_dir",
    "relay_port", "relay_ws_url", "relay_http_url", "agent_relay_url", "path",
})  # fmt: skip
ONLY_UNDER_RAY = {"node"}
#: Where the executors' documents rightly differ (checked on their own).
EXECUTOR_FIELDS = {"executor", "ray_address", "ray_slots_per_node"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    running = RayCluster.start(workers=2)
    try:
        yield running
    finally:
        running.shutdown()


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """Outside pytest's temp tree (0700: the embedded PostgreSQL of the local run runs as
    another user under root)."""
    path = Path(tempfile.mkdtemp(prefix="buzz-ray-"))
    path.chmod(0o755)
    for name in TASKS:
        task_copy(path / "tasks", name)
    (path / "slow-oracle.json").write_text(json.dumps(SLOW_ORACLE))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def differences(
    ray_doc: Any, local_doc: Any, where: str = "", volatile: frozenset[str] = VOLATILE
) -> list[str]:
    """Where two documents differ: every key on both sides (`node` only under Ray), every
    value equal unless it is volatile or the executor's."""
    if isinstance(ray_doc, dict) and isinstance(local_doc, dict):
        found = []
        for key in sorted(set(ray_doc) | set(local_doc)):
            if key in ONLY_UNDER_RAY:
                if key in local_doc or key not in ray_doc:
                    found.append(f"{where}.{key}: must be under ray only")
            elif key not in ray_doc or key not in local_doc:
                found.append(f"{where}.{key}: only {'local' if key in local_doc else 'ray'}")
            elif key not in volatile | EXECUTOR_FIELDS:
                found += differences(ray_doc[key], local_doc[key], f"{where}.{key}", volatile)
        return found
    if isinstance(ray_doc, list) and isinstance(local_doc, list) and len(ray_doc) == len(local_doc):
        pairs = enumerate(zip(ray_doc, local_doc, strict=True))
        return [
            found for i, pair in pairs for found in differences(*pair, f"{where}[{i}]", volatile)
        ]
    return [] if ray_doc == local_doc else [f"{where}: {ray_doc!r} != {local_doc!r}"]


def without_evidence_size(result: dict[str, Any]) -> dict[str, Any]:
    """The result with its evidence file's size left out: `relay_events` holds every row the
    relay stored in the trial's window (orchestrator.md §8.9), other trials' on the same stack
    too, and each Ray node runs its own stack."""
    inputs = result["verifier_inputs"]
    files = [
        {
            key: value
            for key, value in entry.items()
            if entry["source"] != "evidence" or key != "size"
        }
        for entry in inputs["files"]
    ]
    return result | {"verifier_inputs": inputs | {"files": files}}


def layout(trial: Path, channel_id: str) -> set[str]:
    return {
        path.relative_to(trial).as_posix().replace(channel_id, "<channel>")
        for path in trial.rglob("*")
    }


@pytest.fixture(scope="module")
def ray_and_local_jobs(cluster: RayCluster, scratch: Path) -> tuple[Path, Path]:
    """The same plan under both executors, run side by side (each its own stacks)."""
    tasks = str(scratch / "tasks")
    # job names of one length: the evidence files name the job, and their sizes are compared
    commands = [
        ray_benchmark(cluster, scratch, "ray-job", "--path", tasks, "-k", "1", "-n", "2"),
        [
            *benchmark(scratch, "loc-job", "--path", tasks, "-k", "1", "-n", "2"),
            *("--stack", "embedded", "--relay-port", str(free_port())),
        ],
    ]
    runs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in commands
    ]
    for process in runs:
        stdout, stderr = process.communicate(timeout=RUN_TIMEOUT_SECONDS)
        assert process.returncode == 0, stdout + stderr
    return job_dir(scratch, "ray-job"), job_dir(scratch, "loc-job")


def test_oracle_trials_score_on_both_nodes(
    ray_and_local_jobs: tuple[Path, Path], cluster: RayCluster
) -> None:
    ray_job, _ = ray_and_local_jobs
    trials = results(ray_job)
    assert {name: (t["status"], t["reward"]) for name, t in trials.items()} == {
        f"{name}#1": ("scored", 1.0) for name in TASKS
    }
    assert {t["node"]["node_id"] for t in trials.values()} == set(cluster.workers)
    assert not (ray_job / ".incoming").exists()
    log = (ray_job / "job.log").read_text()
    for node in cluster.workers:  # each node host ran its own embedded stack
        assert re.search(rf"node \S+ \({node[:8]}\): stack embedded at ws://localhost:\d+", log), (
            log
        )


def test_the_jobs_directory_matches_the_local_executors(
    ray_and_local_jobs: tuple[Path, Path],
) -> None:
    ray_job, local_job = ray_and_local_jobs
    found = []
    for name in ("config.json", "result.json"):
        ray_doc, local_doc = (json.loads((job / name).read_text()) for job in ray_and_local_jobs)
        found += differences(ray_doc, local_doc, f"job {name}")
    executors = [json.loads((job / "config.json").read_text())["executor"] for job in ray_and_local_jobs]  # fmt: skip
    assert executors == ["ray", "local"]
    ray_trials, local_trials = results(ray_job), results(local_job)
    assert sorted(ray_trials) == sorted(local_trials)
    for name, ray_result in ray_trials.items():
        local_result = local_trials[name]
        found += differences(
            without_evidence_size(ray_result), without_evidence_size(local_result),
            f"{name} result.json",
        )  # fmt: skip
        ray_trial, local_trial = ray_job / ray_result["trial_name"], local_job / local_result["trial_name"]  # fmt: skip
        ray_config, local_config = (json.loads((t / "config.json").read_text()) for t in (ray_trial, local_trial))  # fmt: skip
        found += differences(ray_config, local_config, f"{name} config.json")
        assert ray_config["task"]["dir"] == local_config["task"]["dir"]  # the driver's task
        assert layout(ray_trial, ray_result["buzz"]["channel_id"]) == layout(
            local_trial, local_result["buzz"]["channel_id"]
        ), name
    assert found == [], "\n".join(found)
    summaries = [
        subprocess.run(
            [*orchestra_command("summarize", "--json", str(job))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for job in ray_and_local_jobs
    ]
    ray_summary, local_summary = (json.loads(summary) for summary in summaries)
    assert differences(ray_summary, local_summary, volatile=VOLATILE | {"name"}) == []  # job names


def test_harbor_tasks_score_on_the_cluster_as_they_do_locally(
    cluster: RayCluster, scratch: Path
) -> None:
    """The Harbor fixture tasks travel to the nodes packed like any task; each node's local
    env runs their agents and tests/test.sh in its bubblewrap sandbox."""
    if sandbox_support().program is None:
        pytest.skip(f"Harbor tasks run locally only in the sandbox: {sandbox_support().problem}")
    tasks = harbor_dataset(scratch / "harbor-tasks")
    done = run(ray_benchmark(cluster, scratch, "harbor", "--path", str(tasks), "-k", "1"))
    assert done.returncode == 0, done.stdout + done.stderr
    by_task = {r["short_name"]: r for r in results(job_dir(scratch, "harbor")).values()}
    assert harbor_problems(by_task) == [], done.stdout + done.stderr
    assert {r["node"]["node_id"] for r in by_task.values()} <= set(cluster.workers)


def test_dry_run_lists_the_nodes_their_slots_and_versions(
    cluster: RayCluster, scratch: Path
) -> None:
    listed = run(
        ray_benchmark(cluster, scratch, "dry", "--path", str(scratch / "tasks"), "--dry-run")
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert f"Ray cluster    {cluster.address}: 2 node(s) with buzz_trial slots" in listed.stdout
    for node in cluster.workers:
        assert re.search(
            rf"node \S+ \({node[:8]}\): 1 of 1 slot\(s\) free, buzz-orchestra \S+ ok", listed.stdout
        ), listed.stdout
    assert not (scratch / "jobs" / "dry").exists()


def test_a_node_with_another_version_is_refused_at_preflight(
    cluster: RayCluster, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        with pytest.raises(ClusterUnavailable) as refused:
            check_cluster(cluster.address, driver_version="0.0.1")
    finally:
        ray.shutdown()
    message = str(refused.value)
    assert message.startswith(f"version mismatch on the Ray cluster at {cluster.address}: ")
    assert message.endswith("the driver has 0.0.1")
    for node in cluster.workers:
        assert f"({node[:8]}) has buzz-orchestra " in message
    # and the command refuses to start: exit 2, one line, nothing run
    monkeypatch.setattr(ray_cluster_module, "orchestrator_version", lambda: "0.0.1")
    task = str(scratch / "tasks" / "reply-to-thread")
    args = ray_benchmark(cluster, scratch, "mismatch", "--path", task, "-k", "1")[1:]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 2, outcome.output
    assert "error: version mismatch on the Ray cluster" in outcome.stderr
    assert "Traceback" not in outcome.output
    assert not (scratch / "jobs" / "mismatch").exists()


def test_a_trial_directory_over_the_pack_limit_stays_on_its_node(
    cluster: RayCluster, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scale-out.md §5 step 4 with a limit of 4 KiB instead of 512 MiB: every trial directory
    (config, logs, evidence) packs larger."""
    limited = functools.partial(ray_executor.RayExecutor, max_packed_bytes=4096)
    monkeypatch.setattr(ray_executor, "RayExecutor", limited)
    task = str(scratch / "tasks" / "user-mention")
    args = ray_benchmark(cluster, scratch, "too-large", "--path", task, "-k", "1")[1:]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 3, outcome.output  # ran to the end, a trial is `error`
    assert "Traceback" not in outcome.output
    job = job_dir(scratch, "too-large")
    (trial,) = results(job).values()
    assert trial["status"] == "error"
    assert trial["exception_info"]["exception_type"] == "TrialArtifactsTooLarge"
    message = trial["exception_info"]["exception_message"]
    kept = re.fullmatch(
        r"the packed trial directory exceeds 4096 bytes; it is kept on its node at [^:]+:(\S+)",
        message,
    )
    assert kept is not None, message
    assert trial["node"]["node_id"] in cluster.workers
    kept_dir = Path(kept.group(1))
    assert kept_dir.is_relative_to(cluster.node_dir)
    assert (kept_dir / "config.json").is_file()  # the whole directory, as the trial left it
    assert json.loads((kept_dir / "result.json").read_text())["trial_name"] == trial["trial_name"]
    assert f"{trial['trial_name']}: TrialArtifactsTooLarge: " in (job / "job.log").read_text()


def in_agent_phase(cluster: RayCluster, node_id: str) -> list[Path]:
    trials = []
    for path in node_trials(cluster.node_dir, node_id):
        try:
            if json.loads(path.read_text())["phase"] == "agent":
                trials.append(path.parent)
        except (OSError, ValueError):
            continue  # being rewritten
    return trials


def node_hosts_alive() -> list[str]:
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if command.startswith(("ray::NodeHost", "ray::UpdateSink")):
            found.append(f"{process.info['pid']}: {command[:80]}")
    return found


def test_sigint_cancels_every_trial_and_leaves_no_process_on_any_node(
    cluster: RayCluster, scratch: Path
) -> None:
    command = ray_benchmark(
        cluster, scratch, "interrupted", "--path", str(scratch / "tasks" / "reply-to-thread"),
        "-k", "2", "-n", "2", "--endpoint-config", str(scratch / "slow-oracle.json"),
    )  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for node in cluster.workers:
            wait_until(lambda n=node: process.poll() is None and in_agent_phase(cluster, n), 240, f"a trial in flight on {node}")  # fmt: skip
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stdout + stderr
    trials = results(job_dir(scratch, "interrupted"))
    assert [t["status"] for t in trials.values()] == ["cancelled", "cancelled"], stdout + stderr
    assert {t["node"]["node_id"] for t in trials.values()} == set(cluster.workers)
    wait_until(lambda: not node_processes(cluster.node_dir), GONE_WITHIN_SECONDS, "node processes gone")  # fmt: skip
    wait_until(lambda: not node_hosts_alive(), GONE_WITHIN_SECONDS, "node hosts gone")
    # the run stores its executor: the resume command needs no --executor
    assert "--executor" not in stderr.split("to resume it:")[-1], stderr
    options = json.loads((job_dir(scratch, "interrupted") / "config.json").read_text())["options"]
    assert (options["executor"], options["ray_address"]) == ("ray", cluster.address), options


def test_a_node_whose_stack_fails_gets_no_more_trials(cluster: RayCluster, scratch: Path) -> None:
    """Its trial is `error` `StackUnavailable` naming the node; the rerun (`--retries 1`, the
    default) goes to another node, and the job scores."""
    broken = cluster.add_worker(1, node_dir="/proc/no-such-dir")  # nothing can be created there
    command = ray_benchmark(
        cluster, scratch, "broken", "--path", str(scratch / "tasks" / "reply-to-thread"),
        "-k", "3", "-n", "3", "--endpoint-config", str(scratch / "slow-oracle.json"),
    )  # fmt: skip
    try:
        done = run(command)
    finally:
        cluster.remove_worker(broken)
    assert done.returncode == 0, done.stdout + done.stderr
    job = job_dir(scratch, "broken")
    trials = results(job)
    assert sorted((t["status"], t["reward"]) for t in trials.values()) == [("scored", 1.0)] * 3
    assert {t["node"]["node_id"] for t in trials.values()} <= set(cluster.workers)
    [failed] = [json.loads(p.read_text()) for p in job.glob(".superseded/*/result.json")]
    info = failed["exception_info"]
    assert info["exception_type"] == "StackUnavailable", info
    assert re.match(rf"the stack of node \S+ \({broken[:8]}\) did not start: ", info["exception_message"]), info  # fmt: skip
    assert failed["node"]["node_id"] == broken


def test_a_lost_node_fails_only_its_trial_and_resume_completes_it(
    cluster: RayCluster, scratch: Path
) -> None:
    doomed = cluster.add_worker(1)
    command = ray_benchmark(
        cluster, scratch, "lost", "--path", str(scratch / "tasks" / "reply-to-thread"),
        "-k", "3", "-n", "3", "--endpoint-config", str(scratch / "slow-oracle.json"),
    )  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: process.poll() is None and in_agent_phase(cluster, doomed), 240, "a trial in flight on the doomed node")  # fmt: skip
        cluster.remove_worker(doomed)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 3, stdout + stderr
    job = job_dir(scratch, "lost")
    trials = results(job)
    lost = [t for t in trials.values() if t["status"] == "error"]
    assert len(lost) == 1 and len(trials) == 3, trials
    [trial] = lost
    assert trial["exception_info"]["exception_type"] == "NodeLost"
    assert f"({doomed[:8]}) was lost with the trial in flight" in trial["exception_info"]["exception_message"]  # fmt: skip
    assert trial["node"]["node_id"] == doomed
    others = [t for t in trials.values() if t is not trial]
    assert [(t["status"], t["reward"]) for t in others] == [("scored", 1.0)] * 2
    assert {t["node"]["node_id"] for t in others} == set(cluster.workers)
    # the lost node's stack and agents died with its node host; the others' stopped at the end
    wait_until(lambda: not node_processes(cluster.node_dir), GONE_WITHIN_SECONDS, "node processes gone")  # fmt: skip

    resumed = run(
        [
            *orchestra_command("resume", str(job.parent)),
            *("--executor", "ray", "--ray-address", cluster.address),
        ]
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (job / ".superseded" / trial["trial_name"] / "result.json").is_file()
    after = results(job)
    assert sorted((t["status"], t["reward"]) for t in after.values()) == [("scored", 1.0)] * 3
    resumes = json.loads((job / "config.json").read_text())["resumes"]
    assert [(r["owed_trials"], r["executor"]) for r in resumes] == [(1, "ray")]
