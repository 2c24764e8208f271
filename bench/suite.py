"""The whole default suite, as `just benchmark` runs it, measured over its whole process tree;
with `--baseline REF`, side by side with an earlier commit in one invocation (issue 16).

Run from the repository root (a clean clone needs only `just setup` first):

    .venv/bin/python bench/suite.py --baseline 7f4f840 [--rounds 3] [--relay-port 3615]
    .venv/bin/python bench/suite.py --baseline 7f4f840 --rounds 1 --quick   # a few minutes
    .venv/bin/python bench/suite.py                        # this checkout alone

Each run is one `orchestra benchmark` (oracle condition, tasks/buzz-native, the default plan:
regression k=1 then workflow k=3, 18 trials; embedded stack, local env) started as a
subprocess of the bench. With `--baseline`, REF is checked out as a git worktree in the cache
(~/.cache/buzz-orchestra/bench-baseline/<commit>, with its own venv; reused while REF names
the same commit), and the two checkouts run alternately at each `-n` of each round, baseline
first in odd rounds and current first in even ones (ABBA), so both see the same machine. Each
checkout runs its own default suite with its own state directory and its venv first on PATH
(so the verifier's and the tasks' `python3` is that venv's, whatever the caller's PATH); both get
only options that both understand.

Measured per run: total wall; each trial's wall (result.json `started_at` to `finished_at`);
CPU of the whole process tree (orchestrator and every child, the relay, and PostgreSQL, which
daemonizes: a cgroup of its own when the bench may make one, else RUSAGE_CHILDREN with the bench
as child subreaper; see bench/tree_usage.py); CPU by process kind (Linux taskstats, when
available: bench/process_kinds.py); and, at the memory `-n` (10), the peak RSS and PSS of each
agent tree (buzz-acp + buzz-agent + buzz-dev-mcp, /proc/<pid>/smaps_rollup). Reported for both
checkouts as medians over rounds, with the ratio current / baseline and the spread of the
per-round ratios. Reward check: every trial of every run must score reward 1.0 (18/18) and,
once per checkout, every negative solution (tests/fixtures/negative-solutions, replayed by the
oracle) reward 0.0, else the bench prints FAIL and exits 1 (Ctrl-C: the finished runs are
reported, INCOMPLETE, exit 130). The negative-solution job runs
first and also fills each state directory (fixture profiles), so every measured run is warm.
Results go to docs/performance.md.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from process_kinds import tree, usage_by_kind
from suite_checkout import Checkout, CheckoutError, baseline_checkout, current_checkout
from suite_report import load_average, render, uptime
from taskstats import Listener, TaskstatsError
from tree_usage import MemorySampler, become_subreaper, cpu_method, run_tree

QUICK_TASKS = ("user-mention", "multiline-message", "ambiguous-user-mention")
MEMORY_N = 10


@dataclass
class RunResult:
    side: str
    round: int
    n: int
    exit_code: int
    wall_s: float
    cpu_s: float
    rusage_cpu_s: float
    trials: int
    rewarded: int  # trials scored with reward 1.0 (negative job: reward 0.0)
    trial_walls_s: list[float]
    load_before: float
    load_after: float
    leftover_pids: list[int] = field(default_factory=list)
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    tree_peaks_mib: list[tuple[float, float]] = field(default_factory=list)  # per tree rss, pss
    total_peak_mib: tuple[float, float] = (0.0, 0.0)
    memory_samples: int = 0

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and self.trials > 0 and self.rewarded == self.trials

    @property
    def median_trial_s(self) -> float:
        return statistics.median(self.trial_walls_s) if self.trial_walls_s else float("nan")

    @property
    def cpu_per_trial_s(self) -> float:
        return self.cpu_s / self.trials if self.trials else float("nan")


@dataclass
class Bench:
    args: argparse.Namespace
    work: Path
    by_kind: bool

    def orchestra_args(self, checkout: Checkout, n: int, name: str) -> list[str]:
        side = self.work / checkout.label
        selection = [arg for task in QUICK_TASKS for arg in ("-i", task)] if self.args.quick else []
        return [
            str(checkout.orchestra), "benchmark", "--env", self.args.env,
            "--stack", self.args.stack, "-n", str(n), "--relay-port", str(self.args.relay_port),
            "--jobs-dir", str(side / "jobs" / name), "--state-dir", str(side / "state"),
            "--job-name", name, *selection,
        ]  # fmt: skip

    def run(self, checkout: Checkout, round_: int, n: int, *, negative: bool = False) -> RunResult:
        name = "negative" if negative else f"r{round_}-n{n}"
        argv = self.orchestra_args(checkout, n, name)
        if negative:
            argv += ["--path", str(negative_dataset(checkout, self.work)), "-k", "1"]
        sampler = MemorySampler(0, self.args.memory_interval) if n == MEMORY_N else None
        listener = Listener() if self.by_kind else None
        load_before = load_average()
        if listener is not None:
            listener.start()
        output = self.work / checkout.label / f"{name}.log"
        output.parent.mkdir(parents=True, exist_ok=True)
        measured = run_tree(
            argv, cwd=checkout.root, stdout_path=output, sampler=sampler, env=checkout.environment()
        )
        records = listener.stop() if listener is not None else []
        results = trial_results(self.work / checkout.label / "jobs" / name)
        want = 0.0 if negative else 1.0
        result = RunResult(
            side=checkout.label,
            round=round_,
            n=n,
            exit_code=measured.exit_code,
            wall_s=measured.wall_s,
            cpu_s=measured.cgroup_cpu_s
            if measured.cgroup_cpu_s is not None
            else measured.rusage_cpu_s,
            rusage_cpu_s=measured.rusage_cpu_s,
            trials=len(results),
            rewarded=sum(r["status"] == "scored" and r["reward"] == want for r in results),
            trial_walls_s=[trial_seconds(r) for r in results],
            load_before=load_before,
            load_after=load_average(),
            leftover_pids=measured.leftover_pids,
        )
        if records:
            members = tree(records, os.getpid())
            result.by_kind = {
                usage.kind: {"cpu_s": usage.cpu_s, "processes": usage.processes,
                             "python_starts": usage.python_starts}
                for usage in usage_by_kind(members)
            }  # fmt: skip
        if sampler is not None:
            result.tree_peaks_mib = [
                (r / 1024, p / 1024) for r, p in sampler.tree_peaks_kib.values()
            ]
            result.total_peak_mib = tuple(v / 1024 for v in sampler.total_peak_kib)  # type: ignore[assignment]
            result.memory_samples = sampler.samples
        status = "ok" if result.passed else f"FAIL (see {output})"
        log(
            f"{checkout.label} {name}: {result.rewarded}/{result.trials} reward {want}, "
            f"wall {result.wall_s:.1f} s, CPU {result.cpu_per_trial_s:.2f} s/trial, "
            f"median trial {result.median_trial_s:.2f} s, load {load_before:.2f}: {status}"
        )
        return result


def log(text: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def negative_dataset(checkout: Checkout, work: Path) -> Path:
    """The checkout's tasks with each solution/solve.sh replaced by its negative solution."""
    dest = work / checkout.label / "negative-tasks"
    if not dest.exists():
        shutil.copytree(checkout.dataset, dest, ignore=shutil.ignore_patterns("__pycache__"))
        for task in sorted(p for p in dest.iterdir() if (p / "task.toml").is_file()):
            script = checkout.negative_solutions / f"{task.name}.sh"
            shutil.copyfile(script, task / "solution" / "solve.sh")
    return dest


def trial_result_paths(jobs_dir: Path) -> list[Path]:
    """Every trial's result.json under `jobs_dir`, in either layout: `<job>/<trial>/` (a
    baseline from before runs) or `<run>/<job>/<trial>/`; superseded trials are left out."""
    return [
        path
        for path in sorted(jobs_dir.rglob("result.json"))
        if (path.parent.parent / "job.log").is_file() and ".superseded" not in path.parts
    ]


def trial_results(jobs_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in trial_result_paths(jobs_dir)]


def trial_seconds(result: dict[str, Any]) -> float:
    started = datetime.fromisoformat(result["started_at"].replace("Z", "+00:00"))
    finished = datetime.fromisoformat(result["finished_at"].replace("Z", "+00:00"))
    return (finished - started).total_seconds()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="See the module docstring (bench/suite.py) for what is measured and how.",
    )
    parser.add_argument("--baseline", metavar="REF", help="git commit/tag/branch to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument(
        "--n-values", default="1,4,10", metavar="N,N,...",
        help="-n of each run in a round (default 1,4,10: median trial at 1, suite wall at 4, "
        f"agent-tree memory at {MEMORY_N})",
    )  # fmt: skip
    parser.add_argument(
        "--quick", action="store_true",
        help=f"only the tasks {', '.join(QUICK_TASKS)} (5 trials per run) instead of all ten",
    )  # fmt: skip
    parser.add_argument(
        "--no-negatives", dest="negatives", action="store_false",
        help="skip the negative-solution check (then the first run of each side is cold)",
    )  # fmt: skip
    parser.add_argument(
        "--by-kind", choices=("auto", "on", "off"), default="auto",
        help="CPU by process kind through taskstats (needs root; auto: when available)",
    )  # fmt: skip
    parser.add_argument("--relay-port", type=int, default=0, help="embedded relay port (free)")
    parser.add_argument("--env", choices=("auto", "docker", "local"), default="local")
    parser.add_argument("--stack", choices=("auto", "docker", "embedded"), default="embedded")
    parser.add_argument("--memory-interval", type=float, default=0.25, metavar="SECONDS")
    parser.add_argument("--work-dir", type=Path, help="jobs, state and logs (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write all runs as JSON")
    args = parser.parse_args()
    try:
        args.n_values = [int(value) for value in args.n_values.split(",")]
    except ValueError:
        parser.error(f"--n-values {args.n_values!r}: comma-separated integers, e.g. 1,4,10")
    if args.rounds < 1 or any(n < 1 for n in args.n_values):
        parser.error("--rounds and every --n-values entry must be >= 1")
    args.relay_port = args.relay_port or free_port()
    return args


def taskstats_works(choice: str) -> bool:
    if choice == "off":
        return False
    try:
        listener = Listener()
        listener.start()
        listener.stop()
    except TaskstatsError as error:
        if choice == "on":
            raise SystemExit(f"error: --by-kind on: {error}") from None
        return False
    return True


def main() -> int:
    args = parse_args()
    become_subreaper()
    started_uptime = uptime()
    try:
        checkouts = [current_checkout()]
        if args.baseline:
            checkouts.insert(0, baseline_checkout(args.baseline, log))
    except CheckoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="bench-suite-"))
    work.mkdir(parents=True, exist_ok=True)
    bench = Bench(args, work.resolve(), taskstats_works(args.by_kind))
    runs: list[RunResult] = []
    negatives: list[RunResult] = []
    interrupted = False
    try:
        if args.negatives:
            negatives = [bench.run(c, 0, max(args.n_values), negative=True) for c in checkouts]
        for round_ in range(1, args.rounds + 1):
            # ABBA: which checkout goes first alternates, so that neither is always the one
            # that runs right after the other's run (or always first into a load change).
            order = checkouts if round_ % 2 else checkouts[::-1]
            for n in args.n_values:
                runs.extend(bench.run(checkout, round_, n) for checkout in order)
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: reporting the runs finished so far", file=sys.stderr)
    finally:
        if not args.keep and args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    text = render(
        checkouts,
        runs,
        negatives,
        cpu_method=cpu_method(),
        uptimes=(started_uptime, uptime()),
        command=" ".join(["bench/suite.py", *sys.argv[1:]]),
        memory_n=MEMORY_N,
        interrupted=interrupted,
    )
    print(text)
    if args.json:
        payload = {"runs": [asdict(r) for r in runs], "negatives": [asdict(r) for r in negatives]}
        args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    if args.keep:
        print(f"jobs, state and logs kept in {work}")
    if interrupted:
        return 130
    every = runs + negatives
    return 0 if every and all(r.passed for r in every) else 1


if __name__ == "__main__":
    sys.exit(main())
