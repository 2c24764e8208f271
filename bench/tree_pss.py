"""Agent-tree PSS of one `orchestra benchmark` run, per process and per tree (issue 16):

    .venv/bin/python bench/tree_pss.py [--orchestra PATH] -- BENCHMARK ARGS…

runs `orchestra benchmark BENCHMARK ARGS…` (e.g. `-n 10 -k 1 --relay-port 3772 --env local
--stack embedded --state-dir … --jobs-dir …`) under `tree_usage.MemorySampler` and prints, per
process kind (`tree_usage.kind_of`: a fork server's client apart from the program it started),
the median and largest of the processes' peak PSS and Private_Dirty, and per tree the median
and largest peak PSS over the run, and over the samples in which at least `--sharing-trees`
trees were complete (a tree's PSS rises at the end of a run, as fewer trees share the server's
pages).
"""

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from tree_usage import MemorySampler, become_subreaper, run_tree

MIB = 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orchestra", default=str(Path(sys.executable).parent / "orchestra"))
    parser.add_argument("--interval", type=float, default=0.1, metavar="SECONDS")
    parser.add_argument("--sharing-trees", type=int, default=5, metavar="N")
    parser.add_argument("--output", type=Path, default=Path("/tmp/tree-pss.log"))
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("benchmark", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    benchmark = [arg for arg in args.benchmark if arg != "--"]
    become_subreaper()
    sampler = MemorySampler(0, args.interval, sharing_trees=args.sharing_trees)

    run = run_tree(
        [args.orchestra, "benchmark", *benchmark],
        cwd=Path.cwd(),
        stdout_path=args.output,
        env=dict(os.environ),
        sampler=sampler,
    )
    kinds: dict[str, list[tuple[int, int]]] = {}
    for kind, pss, dirty in sampler.process_peaks_kib.values():
        kinds.setdefault(kind, []).append((pss, dirty))
    figures: dict[str, object] = {"exit_code": run.exit_code, "samples": sampler.samples}
    print(f"exit {run.exit_code}, wall {run.wall_s:.1f} s, {sampler.samples} samples")
    print("process kind: count, peak PSS median / largest, Private_Dirty median / largest (MiB)")
    for kind, values in sorted(kinds.items()):
        pss = [v[0] / MIB for v in values]
        dirty = [v[1] / MIB for v in values]
        row = {
            "count": len(values),
            "pss_median": statistics.median(pss),
            "pss_max": max(pss),
            "dirty_median": statistics.median(dirty),
            "dirty_max": max(dirty),
        }
        figures[kind] = row
        print(
            f"  {kind:22} {len(values):3}  {row['pss_median']:6.1f} / {row['pss_max']:6.1f}"
            f"   [{row['dirty_median']:5.1f} / {row['dirty_max']:5.1f}]"
        )
    peaks = [pss / MIB for _, pss in sampler.tree_peaks_kib.values()]
    shared = [pss / MIB for pss in sampler.shared_peaks_kib.values()]
    sharing = f"peak while >= {sampler.sharing_trees} trees are complete"
    for label, values in (("peak over the run", peaks), (sharing, shared)):
        if values:
            figures[label] = {
                "trees": len(values),
                "median": statistics.median(values),
                "max": max(values),
            }
            print(
                f"tree PSS, {label}: {len(values)} trees, median {statistics.median(values):.1f},"
                f" largest {max(values):.1f} MiB"
            )
    print(
        f"all trees at once (server included): peak PSS {sampler.total_peak_kib[1] / MIB:.1f} MiB"
    )
    figures["total_pss"] = sampler.total_peak_kib[1] / MIB
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
