"""Driver cost per trial against the size of the job, on the local and the Ray executor
(issue 19, scale-out.md §8).

Run from the repository root (a clean clone needs only `just setup` first):

    .venv/bin/python bench/scale.py                          # 100, 1,000 and 10,000 trials
    .venv/bin/python bench/scale.py --sizes 100 1000 -n 16
    .venv/bin/python bench/scale.py --executor ray --sizes 100 1000   # a two-node local cluster
    .venv/bin/python bench/scale.py --suite                  # the oracle suite, local vs Ray

Simulation (the default): each size is one `orchestra benchmark` (the oracle condition on
tasks/buzz-native, all ten tasks in one job with `--attempts size/10`, embedded stack, local
env, `-n` 32 by default) run in a child process through the real run driver
(`orchestra.run`, as the command runs it): preflight, the run and job directories, the jobs runner, the job
`result.json`, the progress lines (to a log file) and the summary. Only the trial is a stub
(bench/scale_stub.py: the trial's documents written through the trial's own record code, a
short sleep per phase, a realistic final result). `--executor ray` runs the same command with
`--executor ray` against a `ray.cluster_utils.Cluster` the bench starts (a head without slots,
two worker nodes with `--ray-slots` `buzz_trial` slots each, every node host its own embedded
stack); the stub goes to the nodes by value.

Measured per size, in the child (the driver; the stacks and Ray's processes are other
processes and not counted), after a warm-up run of 10 trials in the same process (what is paid
once per process: imports, the models' first validations): the driver's CPU per trial from the
first trial's start to the last trial's return (dispatch, the trials' documents, the job
`result.json`, progress), and with the tail after it (the job's last rewrite, the stack's stop,
the summary); under Ray, where trials start and end on the nodes, over the whole command. The
CPU before the first trial (preflight, the stack's start); wall time of the trials and trials
per minute; peak resident memory (ru_maxrss). Checked: every trial scored and the job
`result.json` finished with every trial listed. Target: CPU per trial at the largest size no
more than 1.5x the smallest's (exit 1 otherwise). The trials' documents are fsynced, so wall
time follows the disk.

`--suite`: the real oracle suite (the default plan, 18 trials, `-n` 4) on the local executor
and on the two-node cluster, one after the other in the same invocation: wall time, the
driver's CPU per trial (the whole command), trials per minute, all scored.

Results go to docs/performance.md ("Scale-out (issue 19)").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import scale_stub

REPO = Path(__file__).resolve().parent.parent
TASKS = 10  # tasks/buzz-native
SUITE_TRIALS = 18  # the default plan: regression k=1, workflow k=3
TARGET_RATIO = 1.5
WARM_UP = 10  # trials


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def command(
    work: Path, n_concurrent: int, run_name: str, attempts: int | None, ray_address: str | None,
    *, stub: bool,
) -> int:  # fmt: skip
    """`orchestra benchmark` in this process: the stub trial or the real one, on the local
    executor or (`ray_address`) the cluster's nodes."""
    from rich.console import Console

    from orchestra.documents.run_config import RunConfig, TaskSelection, TrialSettings
    from orchestra.run.driver import Run
    from orchestra.run.execution import Execution
    from orchestra.run.outcome import Refused, RunEnd
    from orchestra.run.prepare import plan_benchmark
    from orchestra.trial.run import run_trial

    config = RunConfig(
        selection=TaskSelection(paths=[REPO / "tasks" / "buzz-native"], attempts=attempts),
        n_concurrent=n_concurrent,
        jobs_dir=work / "jobs",
        stack="embedded" if ray_address is None else "auto",
        env="local",
        relay_port=free_port(),
        state_dir=work / "state",
        trial=TrialSettings(settle_ms=0 if stub else 250),
        run_name=run_name,
        new_run=True,
        check_endpoints=False,
        executor="local" if ray_address is None else "ray",
        ray_address=ray_address,
    )
    execution = Execution.of(config, scale_stub.stub_trial if stub else run_trial)
    try:
        plan = plan_benchmark(config, execution)
    except Refused as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    outcome = Run(plan, execution, Console(soft_wrap=True)).execute()
    for line in outcome.errors:
        print(f"error: {line}", file=sys.stderr)
    return 0 if outcome.end is RunEnd.DONE else 1  # 0: every trial scored, as the command


def child(args: argparse.Namespace) -> int:
    """One size (or the suite) in this process; the measures to `args.out`."""
    if args.ray_address is not None:
        import ray.cloudpickle

        ray.cloudpickle.register_pickle_by_value(scale_stub)  # the nodes cannot import it
    stub = args.child > 0
    if stub:  # pays what is paid once per process: imports, the models' first validations
        command(args.work, args.n_concurrent, "warm-up", 1, args.ray_address, stub=True)
    scale_stub.reset()
    start = scale_stub.now()
    attempts = args.child // TASKS if stub else None
    name = f"scale-{args.child}" if stub else "suite"
    code = command(args.work, args.n_concurrent, name, attempts, args.ray_address, stub=stub)
    end, first, last = scale_stub.now(), scale_stub.FIRST_CALL, scale_stub.LAST_DONE
    documents = [
        json.loads(p.read_text()) for p in (args.work / "jobs" / name).glob("*/result.json")
    ]
    measures: dict[str, Any] = {
        "size": sum(document["n_planned"] for document in documents),
        "exit_code": code,
        "scored": sum(document["stats"]["n_scored"] for document in documents),
        "listed": sum(len(document["trials"]) for document in documents),
        "finished": all(document["finished_at"] is not None for document in documents),
        "cpu_command_s": end.cpu - start.cpu,
        "wall_command_s": end.wall - start.wall,
        "max_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "job_result_bytes": sum(
            p.stat().st_size for p in (args.work / "jobs" / name).glob("*/result.json")
        ),
    }
    if first is not None and last is not None:  # the stub ran in this process
        measures |= {
            "cpu_setup_s": first.cpu - start.cpu,  # preflight, directories, the stack's start
            "cpu_trials_s": last.cpu - first.cpu,  # first trial started .. last trial returned
            "cpu_tail_s": end.cpu - last.cpu,  # the job's end, the stack's stop, the summary
            "wall_trials_s": last.wall - first.wall,
        }
    args.out.write_text(json.dumps(measures))
    return 0


def run_child(size: int, args: argparse.Namespace, ray_address: str | None) -> dict[str, Any]:
    """`size` 0: the suite."""
    work = Path(tempfile.mkdtemp(prefix=f"scale-{size or 'suite'}-"))
    out = work / "measures.json"
    log = work / "progress.log"
    argv = [sys.executable, __file__, "--child", str(size), "--work", str(work),
            "-n", str(args.n_concurrent), "--out", str(out)]  # fmt: skip
    argv += ["--ray-address", ray_address] if ray_address else []
    try:
        with log.open("w") as handle:
            done = subprocess.run(
                argv, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT, check=False
            )
        if done.returncode != 0 or not out.is_file():
            tail = log.read_text(errors="replace").splitlines()[-15:]
            raise SystemExit(
                f"size {size}: the child failed ({done.returncode}):\n" + "\n".join(tail)
            )
        measures: dict[str, Any] = json.loads(out.read_text())
        measures["executor"] = "ray" if ray_address else "local"
        return measures
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def ray_cluster(slots: int) -> Iterator[str]:
    """A head without slots and two worker nodes with `slots` `buzz_trial` slots each, on this
    machine; its address."""
    from ray.cluster_utils import Cluster

    from orchestra.executors.node_host import NODE_DIR_VARIABLE

    node_dir = Path(tempfile.mkdtemp(prefix="scale-nodes-"))
    node_dir.chmod(0o755)  # the embedded PostgreSQL runs as another user under root
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(2):
            cluster.add_node(
                num_cpus=1, resources={"buzz_trial": slots},
                env_vars={NODE_DIR_VARIABLE: str(node_dir)},
            )  # fmt: skip
        cluster.wait_for_nodes()
        yield str(cluster.address)
    finally:
        cluster.shutdown()
        shutil.rmtree(node_dir, ignore_errors=True)


def per_trial(row: dict[str, Any]) -> float:
    """Driver CPU seconds per trial: from the first trial's start to the end of the command
    when the trials ran in this process, else over the whole command."""
    cpu = row["cpu_trials_s"] + row["cpu_tail_s"] if "cpu_trials_s" in row else row["cpu_command_s"]
    return float(cpu) / row["size"]


def all_scored(row: dict[str, Any]) -> bool:
    return bool(row["scored"] == row["listed"] == row["size"] and row["finished"])


def render(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"{rows[0]['executor']} executor, stub trial {scale_stub.STUB_PHASE_SECONDS * 1000:g} ms "
        f"× 6 phases, -n {args.n_concurrent}, load {os.getloadavg()[0]:.2f}, "
        f"{os.cpu_count()} cores",
        "",
        "| trials | driver CPU / trial | vs smallest | trials alone | whole command | "
        "wall | trials/min | peak RSS | job result.json | all scored |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    base = per_trial(rows[0])
    for row in rows:
        size = row["size"]
        alone = f"{row['cpu_trials_s'] / size * 1000:.2f} ms" if "cpu_trials_s" in row else "-"
        wall = row.get("wall_trials_s", row["wall_command_s"])
        lines.append(
            f"| {size:,} | {per_trial(row) * 1000:.2f} ms | {per_trial(row) / base:.2f}× | "
            f"{alone} | {row['cpu_command_s'] / size * 1000:.2f} ms | {wall:.1f} s | "
            f"{size / wall * 60:,.0f} | {row['max_rss_kib'] / 1024:.0f} MiB | "
            f"{row['job_result_bytes'] / 1024:,.0f} KiB | {'yes' if all_scored(row) else 'NO'} |"
        )
    return "\n".join(lines)


def render_suite(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"oracle suite ({SUITE_TRIALS} trials), load {os.getloadavg()[0]:.2f}, "
        f"{os.cpu_count()} cores",
        "",
        "| executor | wall | driver CPU / trial | trials/min | peak RSS | all scored |",
        "|---|---:|---:|---:|---:|:---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['executor']} | {row['wall_command_s']:.1f} s | "
            f"{row['cpu_command_s'] / row['size'] * 1000:.0f} ms | "
            f"{row['size'] / row['wall_command_s'] * 60:.1f} | {row['max_rss_kib'] / 1024:.0f} MiB | "
            f"{'yes' if all_scored(row) else 'NO'} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10_000])
    parser.add_argument("-n", "--n-concurrent", type=int, default=None,
                        help="trials in flight (default 32; 4 with --suite)")  # fmt: skip
    parser.add_argument("--executor", choices=["local", "ray"], default="local")
    parser.add_argument("--ray-slots", type=int, default=16, help="buzz_trial slots per node")
    parser.add_argument("--suite", action="store_true", help="the oracle suite, local vs Ray")
    parser.add_argument("--keep", action="store_true", help="keep each size's jobs directory")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--ray-address", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.n_concurrent is None:
        args.n_concurrent = 4 if args.suite else 32
    if args.child is not None:
        return child(args)
    if any(size % TASKS or size <= 0 for size in args.sizes):
        parser.error(f"every size must be a positive multiple of {TASKS} (the tasks)")
    if args.suite:
        rows = [run_child(0, args, None)]
        with ray_cluster(args.ray_slots) as address:
            rows.append(run_child(0, args, address))
        print(render_suite(rows))
        return 0 if all(all_scored(row) for row in rows) else 1
    with contextlib.ExitStack() as stack:
        address = (
            stack.enter_context(ray_cluster(args.ray_slots)) if args.executor == "ray" else None
        )
        rows = []
        for size in args.sizes:
            rows.append(run_child(size, args, address))
            print(
                f"{size:,} trials: {per_trial(rows[-1]) * 1000:.2f} ms driver CPU/trial", flush=True
            )
    print(render(rows, args))
    if not all(all_scored(row) for row in rows):
        print("FAIL: not every trial scored and listed")
        return 1
    ratio = per_trial(rows[-1]) / per_trial(rows[0])
    print(f"driver CPU per trial, largest / smallest: {ratio:.2f}; target ≤ {TARGET_RATIO}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
