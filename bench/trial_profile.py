"""Where a trial's CPU goes: the suite once, on a checkout (default: 7f4f840, the commit
before issue 16's work, "perf-baseline" in docs/performance.md), with
every process of the tree accounted (issue 16 point 2).

Run from the repository root (root needed: taskstats and a cgroup):

    .venv/bin/python bench/trial_profile.py [--ref 7f4f840] [-n 4] [--relay-port 3617]
    .venv/bin/python bench/trial_profile.py --py-spy /path/to/py-spy      # + sampled hot spots

One warm-up run of the suite fills the state directory (fixture profiles, as every later run on
a machine finds it), then the measured run: `orchestra benchmark` with the default plan, from a
view of the checkout's venv whose programs are wrappers (bench/startup_probe.py), so that the
orchestrator, relay, every `buzz` call, `buzz-acp`, `buzz-agent` and `buzz-dev-mcp` record their
start-up CPU and their imports' CPU by package. Reports per trial: CPU by process kind (taskstats) split into
interpreter start-up, imports and the rest; processes and Python interpreter starts; the
packages whose imports cost most; relay events stored and PostgreSQL transactions (from
`pg_stat_database` and the events table of the run's database); the bare cost of one Python
start. With `--py-spy`, a second measured run is sampled by `py-spy record --subprocesses` and
the report adds each long-lived program's hottest functions after start-up (the sampled run's
CPU is perturbed by the sampler and is not used for the table).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from process_kinds import tree, usage_by_kind
from profile_report import pg_counters, probes, python_start_cpu, render, spy_hot_spots
from suite import QUICK_TASKS, trial_result_paths
from suite_checkout import Checkout, CheckoutError, baseline_checkout, current_checkout
from suite_report import uptime
from taskstats import Listener
from tree_usage import become_subreaper, run_tree

BENCH_DIR = Path(__file__).resolve().parent
WRAPPER = """#!{python}
import sys
sys.path.insert(0, {bench!r})
import startup_probe
sys.path.pop(0)
startup_probe.run({module!r}, {function!r}, {log_dir!r})
"""


def probe_venv(checkout: Checkout, root: Path, log_dir: Path) -> Path:
    """A view of the checkout's venv (its pyvenv.cfg and lib/) whose bin/ holds a probing
    wrapper per program; returns that bin/. Programs find each other beside their interpreter
    (orchestrator: the relay and agent programs; buzz-dev-mcp: `buzz`), so all run wrapped."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copyfile(checkout.venv / "pyvenv.cfg", root / "pyvenv.cfg")
    (root / "lib").symlink_to(checkout.venv / "lib")
    (bin_dir / "python").symlink_to(checkout.venv / "bin" / "python")
    scripts = tomllib.loads((checkout.root / "pyproject.toml").read_text())["project"]["scripts"]
    for name, target in scripts.items():
        module, function = target.split(":")
        path = bin_dir / name
        path.write_text(
            WRAPPER.format(
                python=bin_dir / "python",
                bench=str(BENCH_DIR),
                module=module,
                function=function,
                log_dir=str(log_dir),
            )
        )
        path.chmod(0o755)
    return bin_dir


def benchmark_argv(orchestra: Path, args: argparse.Namespace, work: Path, name: str) -> list[str]:
    return [
        str(orchestra), "benchmark", "--env", "local", "--stack", "embedded",
        "-n", str(args.n_concurrent), "--relay-port", str(args.relay_port),
        "--jobs-dir", str(work / "jobs" / name), "--state-dir", str(work / "state"),
        "--job-name", name, *(arg for task in QUICK_TASKS for arg in ("-i", task) if args.quick),
    ]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="7f4f840", help="commit to profile ('HEAD' and "
                        "'current' mean this checkout as it is)")  # fmt: skip
    parser.add_argument("-n", "--n-concurrent", type=int, default=4)
    parser.add_argument("--relay-port", type=int, default=3617)
    parser.add_argument("--quick", action="store_true", help="the tasks of suite.py --quick")
    parser.add_argument("--py-spy", type=Path, metavar="PROGRAM", help="also sample with py-spy")
    parser.add_argument("--work-dir", type=Path, help="default: a temp dir, removed at the end")
    args = parser.parse_args()
    become_subreaper()
    work = (args.work_dir or Path(tempfile.mkdtemp(prefix="bench-profile-"))).resolve()
    try:
        if args.ref in ("HEAD", "current"):
            checkout = current_checkout()
        else:
            checkout = baseline_checkout(args.ref, lambda line: print(line, file=sys.stderr))
    except CheckoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    env = checkout.environment()
    probe_dir = work / "probes"
    probe_dir.mkdir(parents=True, exist_ok=True)
    bin_dir = probe_venv(checkout, work / "probe-venv", probe_dir)
    started_uptime = uptime()
    try:
        print("warm-up run (fills the state directory)", file=sys.stderr)
        warm = run_tree(
            benchmark_argv(checkout.orchestra, args, work, "warm-up"),
            cwd=checkout.root, stdout_path=work / "warm-up.log", env=env,
        )  # fmt: skip
        if warm.exit_code != 0:
            print(f"error: the warm-up run failed (exit {warm.exit_code}), see {work}")
            return 1
        for stale in probe_dir.iterdir():
            stale.unlink()
        before = pg_counters(checkout, work / "state")
        print(f"measured run ({uptime()})", file=sys.stderr)
        listener = Listener()
        listener.start()
        argv = benchmark_argv(bin_dir / "orchestra", args, work, "measured")
        measured = run_tree(
            argv,
            cwd=checkout.root, stdout_path=work / "measured.log", env=env,
        )  # fmt: skip
        records = listener.stop()
        after = pg_counters(checkout, work / "state")
        members = tree(records, os.getpid())
        measured_probes = probes(probe_dir)
        hot_spots = None
        if args.py_spy:
            print(f"py-spy sampled run ({uptime()})", file=sys.stderr)
            spy_out = work / "py-spy.txt"
            argv = benchmark_argv(bin_dir / "orchestra", args, work, "sampled")
            spy = [str(args.py_spy), "record", "--subprocesses", "--nonblocking", "--format",
                   "raw", "--rate", "100", "--output", str(spy_out), "--", *argv]  # fmt: skip
            with (work / "sampled.log").open("wb") as log:
                subprocess.run(spy, cwd=checkout.root, env=env, stdout=log, stderr=log, check=False)
            hot_spots = spy_hot_spots(spy_out)
        text = render(
            checkout,
            measured,
            members,
            usage_by_kind(members),
            trial_result_paths(work / "jobs" / "measured"),
            measured_probes,
            (before, after),
            python_start_cpu(checkout),
            hot_spots,
            uptimes=(started_uptime, uptime()),
            command=" ".join(["bench/trial_profile.py", *sys.argv[1:]]),
        )
        print(text)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
