"""What the docker environment costs per trial compared with the local one (issue 7).

Run from the repository root (needs a Docker engine, ports 3600 and 5633 free):

    .venv/bin/python bench/docker_overhead.py [-p tasks/buzz-native] [-n 4] [--state-dir DIR]

In one run, the same oracle job (`-k 1` over the dataset) twice: embedded stack + local env,
then docker stack + docker env, each with private jobs directories. The docker stack runs
under its own compose project (`buzz-benchmark-overhead`, removed with its volume at the end),
so a developer's `buzz-benchmark` data is never touched; `--state-dir` reuses a state dir whose
wheelhouse is already filled (image builds happen before the trials and are not measured).

Per environment it reports, as medians over the trials:
* environment start -> first agent subscribed: from the start of the trial's setup phase (the
  `docker run` of the trial container, or the local sandbox creation, is its first step) to the
  first `subscribed` record of any agent's ACP event log;
* the whole trial (result.json `started_at` -> `finished_at`) and its phases.
Results go to docs/performance.md under "## Docker environment overhead".
"""

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from suite import trial_result_paths

from orchestra.paths import StatePaths
from orchestra.stack.docker import stop_docker_stack

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ORCHESTRA = Path(sys.executable).with_name("orchestra")
COMPOSE_PROJECT = "buzz-benchmark-overhead"
PHASES = ("setup", "agent", "teardown", "evidence", "verify", "finalize")


@dataclass(frozen=True)
class EnvRun:
    env: str
    exit_code: int
    wall_s: float
    before_first_trial_s: float  # stack start, image checks (builds when missing)
    trials: list[dict[str, Any]]
    start_to_subscribed: list[float]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def first_subscribed_seconds(trial_dir: Path, trial: dict[str, Any]) -> float | None:
    """Setup start -> the first `subscribed` record of any agent (§7.10)."""
    subscribed = [
        timestamp(record["ts"])
        for log in (trial_dir / "agent" / "buzz").glob("*.events.jsonl")
        for line in log.read_text(encoding="utf-8").splitlines()
        if line.strip() and (record := json.loads(line)).get("event") == "subscribed"
    ]
    setup = trial["timings"].get("setup")
    if not subscribed or not setup:
        return None
    return (min(subscribed) - timestamp(setup["started_at"])).total_seconds()


def run_env(env: str, args: argparse.Namespace, work: Path, state_dir: Path) -> EnvRun:
    stack = ["--stack", "embedded", "--relay-port", str(free_port())]
    if env == "docker":
        stack = ["--stack", "docker"]
    jobs_dir = work / f"jobs-{env}"
    command = [
        str(ORCHESTRA), "benchmark", "--path", str(args.path), "-k", "1",
        "-n", str(args.n_concurrent), "--env", env, *stack, "--state-dir", str(state_dir),
        "--jobs-dir", str(jobs_dir), "--job-name", f"overhead-{env}", "-q",
    ]  # fmt: skip
    started_at = datetime.now().astimezone()
    started = time.perf_counter()
    process = subprocess.run(
        command,
        cwd=PROJECT_ROOT,
        env={**os.environ, "ORCHESTRA_COMPOSE_PROJECT": COMPOSE_PROJECT},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if process.returncode != 0:
        sys.stderr.write(process.stdout[-2000:] + process.stderr[-2000:])
    trial_dirs = [path.parent for path in trial_result_paths(jobs_dir)]
    trials = [json.loads((d / "result.json").read_text(encoding="utf-8")) for d in trial_dirs]
    spans = [first_subscribed_seconds(d, t) for d, t in zip(trial_dirs, trials, strict=True)]
    first = min((timestamp(t["started_at"]) for t in trials), default=started_at)
    return EnvRun(
        env,
        process.returncode,
        wall,
        (first - started_at).total_seconds(),
        trials,
        [s for s in spans if s is not None],
    )


def trial_seconds(trial: dict[str, Any]) -> float:
    return (timestamp(trial["finished_at"]) - timestamp(trial["started_at"])).total_seconds()


def median_phase(run: EnvRun, phase: str) -> float:
    return statistics.median(t["timings"][phase]["seconds"] for t in run.trials)


def summary(run: EnvRun) -> dict[str, float]:
    numbers = {
        "start -> first subscribed": statistics.median(run.start_to_subscribed),
        "whole trial": statistics.median(map(trial_seconds, run.trials)),
    }
    numbers.update({phase: median_phase(run, phase) for phase in PHASES})
    return numbers


def report(runs: list[EnvRun], args: argparse.Namespace) -> str:
    local, docker = (summary(run) for run in runs)
    lines = [
        f"command: .venv/bin/python bench/docker_overhead.py -p {args.path} -n {args.n_concurrent}",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f} at the end",
    ]
    for run in runs:
        scored = sum(t["status"] == "scored" and t["reward"] == 1.0 for t in run.trials)
        lines.append(
            f"{run.env}: exit {run.exit_code}, {len(run.trials)} trials, {scored} with reward 1.0,"
            f" job wall {run.wall_s:.1f} s, of which {run.before_first_trial_s:.1f} s before the"
            " first trial (stack start, image checks)"
        )
    lines += [
        "",
        "| median seconds | local env (embedded stack) | docker env (docker stack) | docker − local |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {name} | {local[name]:.2f} | {docker[name]:.2f} | {docker[name] - local[name]:+.2f} |"
        for name in local
    ]
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-p", "--path", type=Path, default=PROJECT_ROOT / "tasks" / "buzz-native")
    parser.add_argument("-n", "--n-concurrent", type=int, default=4)
    parser.add_argument("--state-dir", type=Path, help="reuse this state dir (and its wheelhouse)")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix="buzz-overhead-"))
    state_dir = args.state_dir or work / "state"
    try:
        runs = [run_env(env, args, work, state_dir) for env in ("local", "docker")]
    finally:
        # only the bench's own compose project and volume; a reused state dir keeps the rest
        asyncio.run(stop_docker_stack(StatePaths(state_dir), volumes=True, project=COMPOSE_PROJECT))
        shutil.rmtree(work, ignore_errors=True)
    if any(not run.trials or not run.start_to_subscribed for run in runs):
        print("a run produced no trials; see the output above", file=sys.stderr)
        return 1
    print(report(runs, args))
    return 0 if all(run.exit_code == 0 for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
