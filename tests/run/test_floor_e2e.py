"""The do-nothing floor end to end (docs/decisions.md D114): a contracts run of a model (a fake
OpenAI-compatible server that never calls a tool) first runs each task once with every seat on
the null endpoint, in `<run>/floor/`, and its printed summary shows the floor beside the
condition: fyi-mention-silence at 1.00, marked, and the model's pass there indistinguishable
from doing nothing. A second run of the same tasks reads the floor from the cache: no floor job.
"""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import DEFAULT_KEY, FakeLLM
from fake_provider import endpoints, manifest

from orchestra.paths import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CONTRACTS = PROJECT_ROOT / "tasks" / "buzz-contracts"
#: the silence contract (a do-nothing agent passes it) and one it fails
TASKS = ("fyi-mention-silence", "exact-name-callback")


def write_condition(root: Path, llm: FakeLLM) -> tuple[Path, Path]:
    return manifest(root / "m.yaml"), endpoints(root / "e.json", llm)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:  # an empty script: every request a plain "stop" answer
        yield server


def benchmark(
    root: Path, relay_url: str, run_name: str, condition: tuple[Path, Path]
) -> subprocess.CompletedProcess[str]:
    manifest, endpoints = condition
    paths = [arg for name in TASKS for arg in ("--path", str(CONTRACTS / name))]
    args = [
        *paths, "--manifest", str(manifest), "--endpoint-config", str(endpoints),
        "--artifact-root", str(PROJECT_ROOT), "--jobs-dir", str(root / "jobs"),
        "--state-dir", str(root / "state"), "--run-name", run_name, "-n", "2",
        "--stack", "external", "--relay-url", relay_url, "--env", "local",
        "--skip-endpoint-check",
    ]  # fmt: skip
    env = {**os.environ, "FAKE_PROVIDER_KEY": DEFAULT_KEY, "COLUMNS": "200"}
    command = [sys.executable, "-c", "from orchestra.cli.main import main; main()", "benchmark"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )


def shown(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


def summary_row(stdout: str, task: str) -> str:
    """The task's row of the summary table."""
    return next(line for line in stdout.splitlines() if line.startswith(f"regression  {task}"))


def test_a_contracts_run_shows_the_floor_and_the_next_run_reuses_it(
    relay_url: str, llm: FakeLLM, tmp_path: Path
) -> None:
    condition = write_condition(tmp_path, llm)
    first = benchmark(tmp_path, relay_url, "first", condition)
    assert first.returncode == 0, shown(first)
    run = tmp_path / "jobs" / "first"
    floor_trials = sorted((run / "floor").glob("*/result.json"))
    assert len(floor_trials) == 2, shown(first)
    floor = json.loads((run / "floor.json").read_text(encoding="utf-8"))["tasks"]
    assert floor["buzz-contracts/fyi-mention-silence"]["reward"] == 1.0
    assert floor["buzz-contracts/exact-name-callback"]["reward"] == 0.0
    assert {entry["source"] for entry in floor.values()} == {"trial"}
    # the floor job is not in the plan: the rates count the model's two trials only
    assert "trials: 2/2 done (2 scored, 0 errors)" in first.stdout, shown(first)
    header = next(line for line in first.stdout.splitlines() if line.startswith("Layer"))
    assert "Pass rate (all)  Floor  pass@k" in header, shown(first)
    floor_at = header.index("Floor")
    silence = summary_row(first.stdout, "buzz-contracts/fyi-mention-silence")
    callback = summary_row(first.stdout, "buzz-contracts/exact-name-callback")
    assert silence[floor_at:].startswith("1.00*"), shown(first)
    assert callback[floor_at:].startswith("0.00 "), shown(first)
    assert (
        "do-nothing floor: 0.50 over 2 tasks (every seat on the null endpoint; * a do-nothing "
        "agent passes the task: buzz-contracts/fyi-mention-silence)" in first.stdout
    ), shown(first)
    # the fake model never calls a tool: its pass of the silence contract is doing nothing
    assert (
        "1 pass on tasks a do-nothing agent passes came from trials that never called a tool: "
        "indistinguishable from doing nothing" in first.stdout
    ), shown(first)
    cache = sorted((tmp_path / "state" / "floor").glob("*.json"))
    assert len(cache) == 2

    second = benchmark(tmp_path, relay_url, "second", condition)
    assert second.returncode == 0, shown(second)
    again = tmp_path / "jobs" / "second"
    assert not (again / "floor").exists(), shown(second)
    floor = json.loads((again / "floor.json").read_text(encoding="utf-8"))["tasks"]
    assert {entry["source"] for entry in floor.values()} == {"cache"}
    assert "do-nothing floor: 0.50 over 2 tasks" in second.stdout, shown(second)
    silence = summary_row(second.stdout, "buzz-contracts/fyi-mention-silence")
    assert "1.00*" in silence, shown(second)
