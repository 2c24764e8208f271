"""The side-by-side suite report (bench/suite.py): Markdown tables, baseline vs current."""

import math
import os
import platform
import statistics
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from process_kinds import KIND_ORDER
from suite_checkout import Checkout

Metric = Callable[[Any], float]


def uptime() -> str:
    result = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return result.stdout.strip() or f"load average {os.getloadavg()}"


def load_average() -> float:
    return os.getloadavg()[0]


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _cell(values: Sequence[float], digits: int) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{_median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def _ratio(current: float, baseline: float) -> float:
    return current / baseline if baseline else float("nan")


def _ratio_cell(ratio: float) -> str:
    return "–" if math.isnan(ratio) else f"**{ratio:.2f}**"


def _rows(runs: list[Any], memory_n: int) -> list[tuple[str, int, Metric, int]]:
    """(label, -n, metric of one run, digits) for the n values present."""
    ns = sorted({r.n for r in runs})
    rows: list[tuple[str, int, Metric, int]] = []
    rows += [(f"total wall at -n {n} (s)", n, lambda r: r.wall_s, 1) for n in ns]
    rows += [(f"median trial wall at -n {n} (s)", n, lambda r: r.median_trial_s, 2) for n in ns]
    rows += [
        (f"CPU per trial, whole process tree, -n {n} (s)", n, lambda r: r.cpu_per_trial_s, 2)
        for n in ns
    ]
    if memory_n in ns:
        rows += [
            ("peak agent-tree RSS, largest tree (MiB)", memory_n,
             lambda r: max((t[0] for t in r.tree_peaks_mib), default=float("nan")), 1),
            ("peak agent-tree PSS, largest tree (MiB)", memory_n,
             lambda r: max((t[1] for t in r.tree_peaks_mib), default=float("nan")), 1),
            ("peak agent-tree PSS, median tree (MiB)", memory_n,
             lambda r: _median([t[1] for t in r.tree_peaks_mib]), 1),
            (f"all agent trees at once, peak RSS at -n {memory_n} (MiB)", memory_n,
             lambda r: r.total_peak_mib[0], 0),
            (f"all agent trees at once, peak PSS at -n {memory_n} (MiB)", memory_n,
             lambda r: r.total_peak_mib[1], 0),
        ]  # fmt: skip
    return rows


def metrics_table(runs: list[Any], sides: list[str], memory_n: int) -> list[str]:
    paired = len(sides) == 2
    head = ["measure", *sides] + (["current / baseline", "per-round ratios"] if paired else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, n, metric, digits in _rows(runs, memory_n):
        per_side = {
            s: {r.round: metric(r) for r in runs if r.side == s and r.n == n} for s in sides
        }
        cells = [label, *(_cell(list(per_side[s].values()), digits) for s in sides)]
        if paired:
            base, cur = per_side["baseline"], per_side["current"]
            ratio = _ratio(_median(list(cur.values())), _median(list(base.values())))
            rounds = [_ratio(cur[k], base[k]) for k in sorted(base) if k in cur]
            cells += [_ratio_cell(ratio), _cell(rounds, 2)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def kind_table(runs: list[Any], sides: list[str]) -> list[str]:
    """CPU seconds, processes and Python starts per trial by process kind, pooled over runs."""
    trials = {s: sum(r.trials for r in runs if r.side == s and r.by_kind) for s in sides}
    if not all(trials.values()):
        return []

    def per_trial(side: str, kind: str, key: str) -> float:
        total = sum(r.by_kind.get(kind, {}).get(key, 0.0) for r in runs if r.side == side)
        return total / trials[side]

    kinds = [k for k in KIND_ORDER if any(k in r.by_kind for r in runs)]
    paired = len(sides) == 2
    head = ["process kind", *(f"{s} CPU s/trial" for s in sides)]
    head += [f"{s} processes (Python) /trial" for s in sides]
    head += ["CPU current / baseline"] if paired else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for kind in [*kinds, "sum of kinds"]:
        pick = kinds if kind == "sum of kinds" else [kind]
        cpu = {s: sum(per_trial(s, k, "cpu_s") for k in pick) for s in sides}
        procs = {s: sum(per_trial(s, k, "processes") for k in pick) for s in sides}
        pythons = {s: sum(per_trial(s, k, "python_starts") for k in pick) for s in sides}
        cells = [kind, *(f"{cpu[s]:.3f}" for s in sides)]
        cells += [f"{procs[s]:.1f} ({pythons[s]:.1f})" for s in sides]
        if paired:
            cells.append(f"{_ratio(cpu['current'], cpu['baseline']):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    tree_cpu = {
        s: sum(r.cpu_s for r in runs if r.side == s and r.by_kind) / trials[s] for s in sides
    }
    cells = ["whole tree (cgroup or rusage)", *(f"{tree_cpu[s]:.3f}" for s in sides)]
    cells += [""] * (len(head) - len(cells))
    lines.append("| " + " | ".join(cells) + " |")
    return lines


def reward_lines(runs: list[Any], negatives: list[Any], interrupted: bool) -> list[str]:
    failed = [r for r in [*runs, *negatives] if not r.passed]
    lines = []
    if negatives:
        shown = ", ".join(f"{r.side} {r.rewarded}/{r.trials}" for r in negatives)
        lines.append(f"negative solutions scoring reward 0.0: {shown}")
    shown = ", ".join(sorted({f"{r.rewarded}/{r.trials}" for r in runs}))
    lines.append(f"suite runs scoring reward 1.0: {len(runs)} runs, each {shown}")
    if failed:
        names = ", ".join(f"{r.side} round {r.round} -n {r.n} (exit {r.exit_code})" for r in failed)
        lines.append(f"**reward check: FAIL** ({names})")
    elif interrupted:
        lines.append("reward check: INCOMPLETE (interrupted; only the runs that finished)")
    else:
        lines.append("reward check: PASS")
    leftovers = [r for r in [*runs, *negatives] if r.leftover_pids]
    if leftovers:
        lines.append(
            "processes left in a run's cgroup after it ended: "
            + "; ".join(f"{r.side} -n {r.n}: {r.leftover_pids}" for r in leftovers)
        )
    return lines


def render(
    checkouts: list[Checkout],
    runs: list[Any],
    negatives: list[Any],
    *,
    cpu_method: str,
    uptimes: tuple[str, str],
    command: str,
    memory_n: int,
    interrupted: bool = False,
) -> str:
    sides = [c.label for c in checkouts]
    lines = [
        f"command: {command}",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        f"uptime at start: {uptimes[0]}",
        f"uptime at end:   {uptimes[1]}",
    ]
    digests = {c.label: c.dataset_digest() for c in checkouts}
    for checkout in checkouts:
        lines.append(
            f"{checkout.label}: {checkout.commit[:12]} ({checkout.root}), "
            f"tasks digest {digests[checkout.label]}"
        )
    if len(set(digests.values())) > 1:
        lines.append("note: the two checkouts' tasks/buzz-native differ")
    loads = [r.load_before for r in runs]
    if loads:
        lines.append(f"1-min load average before each run: {_cell(loads, 2)}")
    lines.append(f"whole-tree CPU: {cpu_method}")
    measured = [r for r in [*runs, *negatives] if r.cpu_s and r.rusage_cpu_s != r.cpu_s]
    if measured:
        gap = max(abs(r.cpu_s - r.rusage_cpu_s) / r.cpu_s for r in measured)
        lines.append(f"cgroup vs RUSAGE_CHILDREN (subreaper): largest difference {100 * gap:.2f} %")
    lines += reward_lines(runs, negatives, interrupted)
    lines += ["", *metrics_table(runs, sides, memory_n)]
    kinds = kind_table(runs, sides)
    if kinds:
        lines += ["", "CPU by process kind (taskstats; all runs pooled):", "", *kinds]
    return "\n".join(lines)
