"""Runs of two models served under one endpoint name are never pooled (docs/decisions.md D87): the
model id sent is part of the condition grouping of the summary, report.json and the leaderboard."""

import json
from pathlib import Path
from typing import Any

import typer
from jobs_builder import TrialSpec, build_job
from runs_support import run_request, start_run
from typer.testing import CliRunner

from orchestra.cli.report_commands import register
from orchestra.config.condition import load_condition
from orchestra.jobs.aggregate import aggregate
from orchestra.jobs.run import job_records
from orchestra.paths import PROJECT_ROOT
from orchestra.report.report_json import build_report
from orchestra.report.text.summary import served_models_text

CONDITION = "buzz-native-solo-local"
TASKS = [f"task-{i}" for i in range(4)]


def local_endpoint(model: str | None) -> dict[str, Any]:
    record = {"provider": "openai", "api_key_env": None, "base_url": "http://127.0.0.1:8000/v1",
              "env_keys": ["OPENAI_COMPAT_API"]}  # fmt: skip
    return {"local": record if model is None else {**record, "model": model}}


def job(jobs: Path, name: str, model: str | None, passing: int) -> Path:
    """Four tasks at k = 1, the first `passing` pass; only the served model differs."""
    return build_job(jobs, name, [
        TrialSpec(task, rewards={"reward": 1.0 if i < passing else 0.0},
                  stop_reason="turn_end" if i < passing else "refusal")
        for i, task in enumerate(TASKS)
    ], condition=CONDITION, endpoints=local_endpoint(model))  # fmt: skip


def test_two_served_models_are_two_conditions(tmp_path: Path) -> None:
    qwen = job(tmp_path, "qwen", "Qwen/Qwen3-8B", passing=4)
    qwen_again = job(tmp_path, "qwen-again", "Qwen/Qwen3-8B", passing=2)
    llama = job(tmp_path, "llama", "meta-llama/Llama-3.1-8B", passing=0)
    report = build_report([qwen, llama, qwen_again]).model_dump(mode="json")
    conditions = report["conditions"]
    assert [c["models"] for c in conditions] == [
        {"local": "Qwen/Qwen3-8B"},
        {"local": "meta-llama/Llama-3.1-8B"},
    ]
    assert [[j["name"] for j in c["jobs"]] for c in conditions] == [
        ["qwen", "qwen-again"],
        ["llama"],
    ]
    # Each condition counts only its own trials, in §11's numbers and in the outcome counts.
    assert [c["totals"]["scored"] for c in conditions] == [8, 4]
    assert [c["totals"]["pass_rate"] for c in conditions] == [0.75, 0.0]
    assert conditions[1]["totals"]["stop_reasons"] == {"refusal": 4}
    assert [j["models"] for j in report["jobs"]] == [
        {"local": "Qwen/Qwen3-8B"}, {"local": "meta-llama/Llama-3.1-8B"}, {"local": "Qwen/Qwen3-8B"}
    ]  # fmt: skip
    assert served_models_text(conditions[0]["models"]) == "  models: local=Qwen/Qwen3-8B"


def test_an_unset_model_pools_with_its_name_sent_explicitly(tmp_path: Path) -> None:
    """The id sent is what counts: `model` unset sends the endpoint's name."""
    unset = job(tmp_path, "unset", None, passing=1)
    named = job(tmp_path, "named", "local", passing=1)
    summary = aggregate(job_records(unset) + job_records(named))
    assert [c.models for c in summary.conditions] == [{"local": "local"}]
    assert served_models_text(summary.conditions[0].models) == ""


def test_leaderboard_ranks_the_served_models_apart(tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    qwen = job(tmp_path, "qwen", "Qwen/Qwen3-8B", passing=4)
    llama = job(tmp_path, "llama", "meta-llama/Llama-3.1-8B", passing=1)
    result = CliRunner().invoke(app, ["leaderboard", str(llama), str(qwen), "--format", "json"])
    assert result.exit_code == 0, result.output
    board = json.loads(result.stdout)
    assert [entry["label"] for entry in board["entries"]] == [
        f"{CONDITION} (model Qwen/Qwen3-8B)",
        f"{CONDITION} (model meta-llama/Llama-3.1-8B)",
    ]
    assert board["shown_apart"] == [CONDITION]
    assert board["entries"][0]["models"] == {"local": "Qwen/Qwen3-8B"}


def test_runs_not_started_are_grouped_by_their_served_model(tmp_path: Path) -> None:
    """A run's jobs that never started take the served models from the run's record."""
    task = PROJECT_ROOT / "tasks" / "buzz-native" / "user-mention"
    runs = []
    for model in ("Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B"):
        endpoints = tmp_path / f"{model.replace('/', '_')}.json"
        endpoints.write_text(json.dumps({"qwen3-8b-local": {
            "provider": "openai", "base_url": "http://127.0.0.1:8000/v1", "model": model,
        }}))  # fmt: skip
        condition = load_condition(
            PROJECT_ROOT / "manifests" / "buzz-native-solo-local.yaml", endpoints, verify=False
        )
        record = start_run(tmp_path / "jobs", run_request(task, condition=condition))
        runs.append(tmp_path / "jobs" / record.run_name)
    conditions = build_report(runs).model_dump(mode="json")["conditions"]
    assert [c["models"] for c in conditions] == [
        {"qwen3-8b-local": "Qwen/Qwen3-8B"},
        {"qwen3-8b-local": "meta-llama/Llama-3.1-8B"},
    ]
    assert [c["totals"]["not_started"] for c in conditions] == [1, 1]
