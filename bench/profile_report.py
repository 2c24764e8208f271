"""Measurements and the report of bench/trial_profile.py (where a trial's CPU goes)."""

import json
import os
import platform
import re
import resource
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from process_kinds import KindUsage, Process
from suite_checkout import Checkout
from tree_usage import TreeRun

PG_COUNTERS = """
import asyncio, json, sys
import asyncpg
from orchestra.relay.embedded_db import EmbeddedPostgres
postgres = EmbeddedPostgres(sys.argv[1])
url = postgres.start_sync()
async def main():
    connection = await asyncpg.connect(url)
    row = await connection.fetchrow(
        "select xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, "
        "tup_updated, tup_deleted from pg_stat_database where datname = current_database()")
    counts = {name: await connection.fetchval(f"select count(*) from {name}")
              for name in ("events", "event_tags")}
    await connection.close()
    print(json.dumps({**dict(row), **counts}))
try:
    asyncio.run(main())
finally:
    postgres.stop_sync()
"""
PYTHON_STARTS = 20
SPY_PROCESS = re.compile(r'^process (\d+):"(?P<cmdline>[^"]*)"$', re.S)
SPY_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def pg_counters(checkout: Checkout, state_dir: Path) -> dict[str, int]:
    """pg_stat_database of the run's database and its table sizes (PostgreSQL restarted once)."""
    data_dirs = sorted(
        (p.parent for p in state_dir.rglob("PG_VERSION")), key=lambda p: len(p.parts)
    )
    if not data_dirs:
        return {}
    python = checkout.venv / "bin" / "python"
    result = subprocess.run(
        [str(python), "-c", PG_COUNTERS, str(data_dirs[0])],
        capture_output=True, text=True, check=False, cwd=checkout.root,
    )  # fmt: skip
    lines = result.stdout.strip().splitlines()
    return json.loads(lines[-1]) if result.returncode == 0 and lines else {}


def python_start_cpu(checkout: Checkout) -> dict[str, float]:
    """CPU seconds of one bare interpreter start of the checkout's venv python, by flags."""
    python = str(checkout.venv / "bin" / "python")
    found = {}
    for label, argv in (
        ("python -c pass (site, the venv's .pth files)", [python, "-c", "pass"]),
        ("python -I -S -c pass (no site)", [python, "-I", "-S", "-c", "pass"]),
    ):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for _ in range(PYTHON_STARTS):
            subprocess.run(argv, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        found[label] = spent / PYTHON_STARTS
    return found


def probes(probe_dir: Path) -> dict[int, dict[str, Any]]:
    found = {}
    for path in probe_dir.glob("*.json"):
        try:
            found[int(path.stem)] = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
    return found


def spy_hot_spots(path: Path, top: int = 12) -> dict[str, dict[str, Any]]:
    """From `py-spy record --format raw --subprocesses`: per program, samples, the share inside
    imports, and the functions with the most samples (self) outside imports."""
    samples: Counter[str] = Counter()
    in_imports: Counter[str] = Counter()
    own: dict[str, Counter[str]] = defaultdict(Counter)
    if not path.is_file():
        return {}
    for stack, count_text in _spy_records(path.read_text(encoding="utf-8", errors="replace")):
        frames = stack.split(";")
        program = "?"
        while frames and (match := SPY_PROCESS.match(frames[0])):
            words = match["cmdline"].split()
            program = next((os.path.basename(w) for w in words[:2] if "python" not in w), "?")
            frames = frames[1:]
        count = int(count_text)
        samples[program] += count
        if any("_find_and_load" in frame or frame.startswith("<module>") for frame in frames[1:]):
            in_imports[program] += count
            continue
        leaf = SPY_FRAME.match(frames[-1]) if frames else None
        if leaf:
            name = f"{leaf['function']} ({_short(leaf['file'])})"
        else:
            name = frames[-1] if frames else "(no Python frame)"
        own[program][name] += count
    return {
        program: {
            "samples": samples[program],
            "import_share": in_imports[program] / samples[program],
            "top": own[program].most_common(top),
        }
        for program in samples
    }


def _spy_records(text: str) -> list[tuple[str, str]]:
    """(stack, count) per record; a record may span lines (a command line with newlines)."""
    records, pending = [], ""
    for line in text.splitlines():
        pending = f"{pending} {line}" if pending else line
        stack, _, count = pending.rpartition(" ")
        if stack and count.isdigit():
            records.append((stack, count))
            pending = ""
    return records


def _short(path: str) -> str:
    for marker in ("site-packages/", "orchestra/", "lib/python3"):
        if marker in path:
            return path[path.index(marker) :].removeprefix("site-packages/")
    return path


def render(
    checkout: Checkout,
    run: TreeRun,
    members: list[Process],
    kinds: list[KindUsage],
    results: list[Path],
    measured_probes: dict[int, dict[str, Any]],
    pg: tuple[dict[str, int], dict[str, int]],
    python_starts: dict[str, float],
    hot_spots: dict[str, dict[str, Any]] | None,
    *,
    uptimes: tuple[str, str],
    command: str,
) -> str:
    trials = len(results)
    rewards = [json.loads(p.read_text(encoding="utf-8")).get("reward") for p in results]
    cpu = run.cgroup_cpu_s if run.cgroup_cpu_s is not None else run.rusage_cpu_s
    by_pid = {process.tgid: process for process in members}
    split: dict[str, list[float]] = defaultdict(lambda: [0.0] * 5)  # start, imports, run, exit, n
    packages: dict[str, Counter[str]] = defaultdict(Counter)
    for pid, probe in measured_probes.items():
        process = by_pid.get(pid)
        if process is None:
            continue
        entry = split[process.kind]
        before_main = probe["startup_cpu_s"] + probe["import_cpu_s"]
        returned = probe["returned_cpu_s"]
        total = process.cpu_us / 1e6
        entry[0] += probe["startup_cpu_s"]
        entry[1] += probe["import_cpu_s"]
        entry[2] += (returned if returned is not None else total) - before_main
        entry[3] += total - returned if returned is not None else 0.0
        entry[4] += 1
        packages[process.kind].update(probe["packages"])
    lines = [
        f"command: {command}",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        f"uptime at start: {uptimes[0]}",
        f"uptime at end:   {uptimes[1]}",
        f"profiled: {checkout.label} {checkout.commit[:12]} ({checkout.root})",
        f"measured run: exit {run.exit_code}, {trials} trials, rewards "
        f"{dict(Counter(rewards))}, wall {run.wall_s:.1f} s, whole-tree CPU {cpu:.2f} s "
        f"= {cpu / trials:.3f} s per trial (taskstats sum of kinds "
        f"{sum(k.cpu_s for k in kinds) / trials:.3f} s)",
        "",
        "| process kind | processes /trial | Python starts /trial | CPU s /trial | share | "
        "interpreter start | imports | main | finalization |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for usage in sorted(kinds, key=lambda k: -k.cpu_s):
        *parts, probed = split.get(usage.kind, [0.0] * 5)
        cells = [
            usage.kind,
            f"{usage.processes / trials:.2f}",
            f"{usage.python_starts / trials:.2f}",
            f"{usage.cpu_s / trials:.3f}",
            f"{100 * usage.cpu_s / cpu:.1f} %",
        ]
        cells += [f"{part / trials:.3f}" for part in parts] if probed else ["", "", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Imports by top-level package, CPU s per trial (exclusive of nested packages):"]
    for kind, counter in sorted(packages.items(), key=lambda item: -sum(item[1].values())):
        top = ", ".join(
            f"{name} {seconds / trials:.3f}" for name, seconds in counter.most_common(8)
        )
        lines.append(f"- {kind}: {top}")
    lines += ["", "Bare interpreter start (CPU s per start, mean of 20):"]
    lines += [f"- {label}: {seconds:.4f}" for label, seconds in python_starts.items()]
    before, after = pg
    if before and after:
        delta = {key: after[key] - before.get(key, 0) for key in after}
        lines += [
            "",
            "Per trial, from the run's database: "
            + ", ".join(f"{key} {value / trials:.1f}" for key, value in delta.items()),
        ]
    if hot_spots:
        lines += ["", "py-spy (sampled run, 100 Hz, idle threads excluded):"]
        for program, spots in sorted(hot_spots.items(), key=lambda item: -item[1]["samples"]):
            top = "; ".join(f"{name} {count}" for name, count in spots["top"])
            lines.append(
                f"- {program}: {spots['samples']} samples, {100 * spots['import_share']:.0f} % "
                f"in imports; outside imports, most samples (self): {top}"
            )
    return "\n".join(lines)
