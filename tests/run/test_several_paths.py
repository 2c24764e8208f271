"""`-p/--path` is repeatable (orchestrator.md §2.2): several suites make one plan and one run,
whose `run.json` records every path; two tasks of one name among them refuse the run in one
line; a run recorded with one `path` still reads (tests/run/test_old_runs.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.documents.run_config import RunConfig
from orchestra.paths import PROJECT_ROOT
from orchestra.run.execution import Execution
from orchestra.run.outcome import Refused
from orchestra.run.prepare import plan_benchmark

NATIVE = PROJECT_ROOT / "tasks" / "buzz-native"
CONTRACTS = PROJECT_ROOT / "tasks" / "buzz-contracts"


def suite_names(path: Path) -> set[str]:
    return {f"{path.name}/{child.parent.name}" for child in path.glob("*/task.toml")}


def test_two_suites_make_one_plan_whose_run_records_both_paths(tmp_path: Path) -> None:
    config = RunConfig().updated(
        {"paths": [NATIVE, CONTRACTS], "jobs_dir": tmp_path, "stack": "external",
         "relay_url": "ws://127.0.0.1:1", "env": "local", "run_name": "both"}
    )  # fmt: skip
    plan = plan_benchmark(config, Execution.of(config))
    planned = {task.name for job in plan.scope.jobs for task in job.tasks}
    assert planned == suite_names(NATIVE) | suite_names(CONTRACTS)
    assert suite_names(NATIVE) and suite_names(CONTRACTS)
    assert [job.layer for job in plan.scope.jobs] == ["regression", "workflow"]
    assert plan.scope.stored.selection.paths == [NATIVE.absolute(), CONTRACTS.absolute()]
    stored = json.loads(plan.scope.stored.model_dump_json())["selection"]
    assert stored["paths"] == [NATIVE.as_posix(), CONTRACTS.as_posix()] and "path" not in stored


def test_the_command_line_takes_path_more_than_once() -> None:
    shown = CliRunner().invoke(
        app, ["benchmark", "-p", str(NATIVE), "--path", str(CONTRACTS), "--print-config"]
    )
    assert shown.exit_code == 0, shown.output
    assert f"  paths:\n  - {NATIVE}\n  - {CONTRACTS}\n" in shown.output


def test_two_tasks_of_one_name_in_two_paths_refuse_the_run_in_one_line(tmp_path: Path) -> None:
    for suite in ("a", "b"):
        shutil.copytree(NATIVE / "user-mention", tmp_path / suite / "user-mention")
    config = RunConfig().updated({"paths": [tmp_path / "a", tmp_path / "b"], "env": "local"})
    with pytest.raises(Refused) as refused:
        plan_benchmark(config, Execution.of(config))
    assert str(refused.value) == (
        f'duplicate task name "buzz-native/user-mention" in {tmp_path}/a/user-mention '
        f"and {tmp_path}/b/user-mention"
    )
    result = CliRunner().invoke(
        app, ["benchmark", "-p", str(tmp_path / "a"), "-p", str(tmp_path / "b"), "--dry-run"]
    )
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"error: {refused.value}"]


def test_a_path_given_twice_plans_its_tasks_once(tmp_path: Path) -> None:
    config = RunConfig().updated(
        {"paths": [NATIVE, NATIVE / "user-mention"], "jobs_dir": tmp_path, "env": "local",
         "stack": "external", "relay_url": "ws://127.0.0.1:1"}
    )  # fmt: skip
    plan = plan_benchmark(config, Execution.of(config))
    names = [task.name for job in plan.scope.jobs for task in job.tasks]
    assert sorted(names) == sorted(suite_names(NATIVE))


def test_a_selection_stored_with_one_path_reads_as_paths() -> None:
    """run.json and config.json files written before `-p` was repeatable hold `path`."""
    one = {"selection": {"path": "/data/suite", "layer": None, "include": [], "exclude": []}}
    assert RunConfig.model_validate_json(json.dumps(one)).selection.paths == [Path("/data/suite")]
    default = {"selection": {"path": None}}
    assert RunConfig.model_validate_json(json.dumps(default)).selection.paths == []
