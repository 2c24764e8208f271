"""What each start-up CPU cut of issue 16 saves, one program at a time, measured alternately.

    .venv/bin/python bench/startup_cuts.py [--runs 15]

For every cut, two variants of the same short Python program run alternately (`--runs` pairs,
the order flipping every pair) as fresh interpreters from this checkout's venv, and each run's
CPU (user + system, `RUSAGE_CHILDREN`, interpreter start to exit) is recorded. The programs do
what the real ones do before their first message (their imports, and for buzz-agent its HTTP
client), with and without the cut; the report gives both medians, the median of the per-pair
differences (what the cut saves per process start) and that difference times the starts per
trial (buzz-acp, buzz-agent, buzz-dev-mcp once each, `buzz` 4.44 times: perf-baseline
profile, docs/performance.md). The machine is shared and noisy: read the per-pair spread.
Results go to docs/performance.md.
"""

import argparse
import resource
import statistics
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

PAUSE = "import gc; gc.disable()\n"
RESUME = "gc.freeze(); gc.enable()\n"
SKIP_DOCSTRINGS = "from orchestra.agents.sdk_imports import field_docstrings_skipped\n"
ACP_IMPORT = "import orchestra.agents.acp.bridge\n"
ACP_IMPORT_SKIPPED = SKIP_DOCSTRINGS + "with field_docstrings_skipped():\n    " + ACP_IMPORT
AGENT_IMPORT = "import orchestra.agents.agent.acp_agent, mcp\n"
AGENT_IMPORT_SKIPPED = (
    SKIP_DOCSTRINGS
    + "with field_docstrings_skipped():\n    import orchestra.agents.agent.acp_agent\nimport mcp\n"
)
DEVMCP_IMPORT = "import orchestra.agents.devmcp.server\n"
BUZZ_IMPORT = "import orchestra.buzz.cli, orchestra.buzz.connection, orchestra.buzz.core\n"
FAST_EXIT = "import os, sys; sys.stdout.flush(); os._exit(0)\n"
HTTP_CLIENT = "import httpx\nhttpx.AsyncClient(timeout=5{verify})\n"
#: Variant code that runs instead of `site`'s automatic start, to compare an editable install
#: (the venv's `.pth` files and the editable finder) with a plain one (the package on sys.path).
EDITABLE_SITE = "import site; site.main()\n"
PLAIN_SITE = "import site, sys\nsys.path[1:1] = ['{repo}', '{purelib}']\n"


@dataclass(frozen=True)
class Cut:
    name: str
    program: str
    starts_per_trial: float
    without: str
    with_cut: str
    python_flags: tuple[str, ...] = ()


def cuts(repo: str, purelib: str) -> list[Cut]:
    return [
        Cut("cyclic GC paused during imports", "buzz-acp", 1, ACP_IMPORT, PAUSE + ACP_IMPORT + RESUME),
        Cut("cyclic GC paused during imports", "buzz-agent", 1, AGENT_IMPORT, PAUSE + AGENT_IMPORT + RESUME),
        Cut("cyclic GC paused during imports", "buzz-dev-mcp", 1, DEVMCP_IMPORT, PAUSE + DEVMCP_IMPORT + RESUME),
        Cut("ACP SDK without field docstrings", "buzz-acp", 1, PAUSE + ACP_IMPORT, PAUSE + ACP_IMPORT_SKIPPED),
        Cut("ACP SDK without field docstrings", "buzz-agent", 1, PAUSE + AGENT_IMPORT, PAUSE + AGENT_IMPORT_SKIPPED),
        Cut("GC paused, exit without finalization", "buzz", 4.44, BUZZ_IMPORT, PAUSE + BUZZ_IMPORT + FAST_EXIT),
        Cut("no CA bundle for an http endpoint", "buzz-agent", 1, HTTP_CLIENT.format(verify=""), HTTP_CLIENT.format(verify=", verify=False")),
        Cut("plain install instead of editable (not applied)", "buzz", 4.44, EDITABLE_SITE + BUZZ_IMPORT, PLAIN_SITE.format(repo=repo, purelib=purelib) + BUZZ_IMPORT, ("-S",)),
        Cut("plain install instead of editable (not applied)", "buzz-dev-mcp", 1, EDITABLE_SITE + DEVMCP_IMPORT, PLAIN_SITE.format(repo=repo, purelib=purelib) + DEVMCP_IMPORT, ("-S",)),
    ]  # fmt: skip


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(flags: tuple[str, ...], code: str) -> float:
    before = children_cpu()
    subprocess.run([sys.executable, *flags, "-c", code], check=True, stdout=subprocess.DEVNULL)
    return children_cpu() - before


def measure(cut: Cut, runs: int) -> tuple[float, float, list[float]]:
    without, with_cut, saved = [], [], []
    for pair in range(runs):
        if pair % 2:
            b = timed(cut.python_flags, cut.with_cut)
            a = timed(cut.python_flags, cut.without)
        else:
            a = timed(cut.python_flags, cut.without)
            b = timed(cut.python_flags, cut.with_cut)
        without.append(a)
        with_cut.append(b)
        saved.append(a - b)
    return statistics.median(without), statistics.median(with_cut), saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="alternating pairs per cut")
    args = parser.parse_args()
    repo = str(Path(__file__).resolve().parents[1])
    purelib = sysconfig.get_path("purelib")
    print(
        f"{'cut':48} {'program':13} {'without s':>9} {'with s':>7} {'saved s':>8} "
        f"{'pairs q1-q3':>13} {'s/trial':>8}"
    )
    for cut in cuts(repo, purelib):
        timed(cut.python_flags, cut.without)  # warm the page cache and the compiled files
        without, with_cut, saved = measure(cut, args.runs)
        q1, median, q3 = statistics.quantiles(saved, n=4)
        print(
            f"{cut.name:48} {cut.program:13} {without:9.3f} {with_cut:7.3f} {median:8.3f} "
            f"{q1:6.3f}-{q3:6.3f} {median * cut.starts_per_trial:8.3f}"
        )


if __name__ == "__main__":
    main()
