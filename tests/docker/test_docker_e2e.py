"""`orchestra benchmark --stack docker --env docker` end to end (orchestrator.md §5.3, §5.8, §9.2).

Real compose stack, real trial containers of the tasks' agent layers, the oracle condition.
The stack runs under a test compose project (so a developer's `buzz-benchmark` volume is never
touched) on the spec's fixed host ports, and is removed with its volume at the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker_support import BuiltImages
from harbor_support import harbor_dataset, harbor_problems
from tamper_support import tamper_dataset, tamper_problems, tamper_solutions

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.paths import PROJECT_ROOT, StatePaths
from orchestra.processes import run_command
from orchestra.stack.docker import POSTGRES_HOST_PORT, RELAY_HOST_PORT
from orchestra.stack.select import COMPOSE_PROJECT_VARIABLE
from orchestra.trial.env.container import LABEL_JOB

pytestmark = pytest.mark.docker

ORCHESTRA = Path(sys.executable).with_name("orchestra")
DATASET = PROJECT_ROOT / "tasks" / "buzz-native"
TEST_PROJECT = "buzz-benchmark-pytest-e2e"
ORACLE_TASKS = ("read-named-path-outside-workspace", "memory-retrieval", "reply-to-thread")
#: Appended to reply-to-thread's test.sh: from inside the verifier, try to reach the relay the
#: agents used minutes earlier, and record the outcome next to the rewards.
NETWORK_PROBE = """
python3 - <<'PY'
import socket
try:
    socket.create_connection(("host.docker.internal", 3600), timeout=5).close()
    outcome = "connected"
except OSError as error:
    outcome = f"refused: {type(error).__name__}: {error}"
open("/logs/verifier/network-probe.txt", "w").write(outcome)
PY
"""
JOB_TIMEOUT_SECONDS = 600
#: trial.log's lines naming the agents' container (disconnected after the agents stopped) and
#: the verifier's (§9.2).
AGENTS_CONTAINER = re.compile(r"container (?P<name>bo-\S+) disconnected from ")
VERIFIER_CONTAINER = re.compile(
    r"verifier container (?P<name>\S+) \((?P<id>[0-9a-f]{12})\) from (?P<image>\S+): no network"
)
CONTAINER_WAIT_SECONDS = 120


def _port_is_free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def environ() -> dict[str, str]:
    return {**os.environ, COMPOSE_PROJECT_VARIABLE: TEST_PROJECT}


@pytest.fixture(scope="module")
def state_dir(built: BuiltImages, environ: dict[str, str]) -> Iterator[Path]:
    """The session's state dir (its wheelhouse is filled); the stack is removed afterwards."""
    for port in (RELAY_HOST_PORT, POSTGRES_HOST_PORT):
        if not _port_is_free(port):
            pytest.fail(f"port {port} is in use; stop what holds it (a benchmark stack?)")
    yield built.state.root
    down = subprocess.run(
        [str(ORCHESTRA), "stack", "down", "--volumes", "--state-dir", str(built.state.root)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert down.returncode == 0, down.stdout + down.stderr


def _dataset(root: Path) -> Path:
    """Copies of the three tasks; reply-to-thread's verifier also probes the network."""
    for name in ORACLE_TASKS:
        shutil.copytree(DATASET / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    test_sh = root / "reply-to-thread" / "tests" / "test.sh"
    test_sh.write_text(test_sh.read_text(encoding="utf-8") + NETWORK_PROBE, encoding="utf-8")
    return root


def _benchmark_argv(path: Path, state_dir: Path, jobs_dir: Path, job: str) -> list[str]:
    return [
        str(ORCHESTRA), "benchmark", "--path", str(path), "-k", "1", "-n", "3",
        "--stack", "docker", "--env", "docker", "--state-dir", str(state_dir),
        "--jobs-dir", str(jobs_dir), "--job-name", job, "-q",
    ]  # fmt: skip


def _job_containers(job: str) -> list[str]:
    listed = subprocess.run(
        ["docker", "ps", "--all", "--filter", f"label={LABEL_JOB}={job}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return listed.stdout.split()


def _job_dir(jobs_dir: Path, job: str) -> Path:
    """`-k 1`: the run `--job-name` names holds one job of the same name."""
    return jobs_dir / job / job


def _results(job_dir: Path) -> dict[str, dict[str, Any]]:
    return {
        json.loads(path.read_text())["short_name"]: json.loads(path.read_text())
        for path in job_dir.glob("*/result.json")
    }


def test_oracle_scores_in_containers_and_the_verifier_is_offline(
    state_dir: Path, environ: dict[str, str], tmp_path: Path
) -> None:
    job = f"docker-oracle-{uuid.uuid4().hex[:8]}"
    dataset = _dataset(tmp_path / "tasks")
    run = subprocess.run(
        _benchmark_argv(dataset, state_dir, tmp_path / "jobs", job),
        env=environ,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_SECONDS,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    job_dir = _job_dir(tmp_path / "jobs", job)
    results = _results(job_dir)
    assert sorted(results) == sorted(ORACLE_TASKS)
    for name, result in results.items():
        assert (result["status"], result["reward"]) == ("scored", 1.0), name
        assert result["verifier"]["network"] == "none", name
        # the side files came out of the container with the logs and were assembled (§7.16)
        agents = sorted(agent["agent_id"] for agent in result["buzz"]["agents"])
        assert sorted(result["trajectories"]) == agents, name
        for relative in result["trajectories"].values():
            trial = job_dir / result["trial_name"]
            steps = Trajectory.model_validate_json((trial / relative).read_bytes()).steps
            calls = [call.tool_call_id for step in steps for call in step.tool_calls or []]
            assert any(call.startswith("oracle-solve-") for call in calls), name
    config = json.loads((job_dir / "config.json").read_text())
    assert config["environment"] == "docker"
    assert config["stack"]["agent_relay_url"] == "ws://host.docker.internal:3600"

    for trial_log in job_dir.glob("*/trial.log"):
        text = trial_log.read_text()
        agents, verifier = AGENTS_CONTAINER.search(text), VERIFIER_CONTAINER.search(text)
        assert agents and verifier, text
        assert verifier["name"] != agents["name"], text
        assert "-agent:" not in verifier["image"], text  # the task's image, no agent layer

    probe_files = list(job_dir.glob("reply-to-thread__*/verifier/network-probe.txt"))
    assert len(probe_files) == 1
    probe = probe_files[0].read_text()
    # the relay was reachable from this container while its agents ran (the trial scored)
    assert probe.startswith("refused: "), probe
    assert _job_containers(job) == []


def test_harbor_tasks_are_graded_on_their_container_state(
    state_dir: Path, environ: dict[str, str], tmp_path: Path
) -> None:
    """Harbor-format tasks: the agents work in the task's own container in its
    WORKDIR, and tests/test.sh grades that container after they stopped, offline; solo, then
    as the oracle team (a worker runs the solution; the images are built once)."""
    tasks = harbor_dataset(tmp_path / "tasks")
    team = ["--manifest", str(PROJECT_ROOT / "manifests" / "buzz-native-team-oracle.yaml")]
    for name, extra in (("solo", []), ("team", team)):
        job = f"docker-harbor-{name}-{uuid.uuid4().hex[:8]}"
        argv = [*_benchmark_argv(tasks, state_dir, tmp_path / "jobs", job), *extra]
        run = subprocess.run(
            argv, env=environ, capture_output=True, text=True, timeout=JOB_TIMEOUT_SECONDS
        )
        assert run.returncode == 0, run.stdout + run.stderr
        job_dir = _job_dir(tmp_path / "jobs", job)
        results = _results(job_dir)
        assert harbor_problems(results) == [], name
        expected_stop = "done_message" if name == "team" else "turn_end"
        assert {r["stop_reason"] for r in results.values()} == {expected_stop}, name
        for trial_log in job_dir.glob("*/trial.log"):
            text = trial_log.read_text()
            assert "tests/test.sh in the agents' container" in text, text
            assert not VERIFIER_CONTAINER.search(text), text  # no verifier container of its own
        assert _job_containers(job) == []


def test_tamper_solutions_get_exactly_what_their_evidence_earns(
    state_dir: Path, environ: dict[str, str], tmp_path: Path
) -> None:
    """The tamper suite (tests/tamper_support.py) in the docker env: as root in the agents'
    container they replace python3 and sh, edit /tests, plant start-up hooks and reward files,
    leave a rewriter running; the verifier, in a container of its own, sees none of it."""
    job = f"docker-tamper-{uuid.uuid4().hex[:8]}"
    tasks = tamper_dataset(tmp_path / "tasks")
    argv = _benchmark_argv(tasks, state_dir, tmp_path / "jobs", job)
    run = subprocess.run(
        argv, env=environ, capture_output=True, text=True, timeout=JOB_TIMEOUT_SECONDS, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    job_dir = _job_dir(tmp_path / "jobs", job)
    results = _results(job_dir)
    problems = {}
    for solution in tamper_solutions():
        result = results[solution.task]
        trial_log = (job_dir / result["trial_name"] / "trial.log").read_text()
        if found := tamper_problems(solution, result, trial_log, "docker"):
            problems[solution.name] = [*found, trial_log]
    assert problems == {}
    assert _job_containers(job) == []


def _wait_for_a_container(job: str, process: subprocess.Popen[str]) -> None:
    """The engine has no event we can await from here: poll `docker ps` until the job's first
    trial container exists (or the run ended without one)."""
    deadline = time.monotonic() + CONTAINER_WAIT_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        if _job_containers(job):
            return
        time.sleep(0.2)
    pytest.fail(f"no container of job {job} appeared (run exited {process.poll()})")


@pytest.mark.parametrize("interrupt", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_no_container_is_left_after_an_interrupted_run_and_cleanup(
    state_dir: Path, environ: dict[str, str], tmp_path: Path, interrupt: signal.Signals
) -> None:
    """SIGINT: the trials stop and remove their containers themselves (exit 130). SIGKILL
    leaves them behind; `orchestra cleanup --job` reaps them by label."""
    job = f"docker-cancel-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen(
        _benchmark_argv(DATASET / "reply-to-thread", state_dir, tmp_path / "jobs", job),
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_a_container(job, process)
        process.send_signal(interrupt)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if interrupt == signal.SIGINT:
        assert process.returncode == 130, stdout + stderr
        assert _job_containers(job) == []
        (result,) = _results(_job_dir(tmp_path / "jobs", job)).values()
        assert result["status"] == "cancelled"
    else:
        assert _job_containers(job) != []
    cleanup = subprocess.run(
        [str(ORCHESTRA), "cleanup", "--job", job, "--jobs-dir", str(tmp_path / "jobs")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    expected = "removed 0 container(s)" if interrupt == signal.SIGINT else "removed 1 container(s)"
    assert expected in cleanup.stdout
    assert _job_containers(job) == []


async def test_a_failing_agent_layer_build_is_a_preflight_error_naming_the_task(
    state_dir: Path, environ: dict[str, str], tmp_path: Path
) -> None:
    task = tmp_path / "tasks" / "reply-to-thread"
    shutil.copytree(DATASET / "reply-to-thread", task)
    (task / "environment" / "Dockerfile").write_text(
        "FROM python:3.12-slim-bookworm\nRUN exit 3\n", encoding="utf-8"
    )
    run = await run_command(
        _benchmark_argv(task, StatePaths(state_dir).root, tmp_path / "jobs", "bad-build"),
        timeout_seconds=JOB_TIMEOUT_SECONDS,
        env=environ,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "error: task buzz-native/reply-to-thread: image: build failed" in run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert not list((tmp_path / "jobs").glob("*/*/result.json"))
