"""Trial results, job configs and event-log records for unit tests, built through the models."""

from __future__ import annotations

import json
from typing import Any

from orchestra.agents.acp.records import Record, read_record
from orchestra.documents.job import JobConfig
from orchestra.documents.report import ReportDocument
from orchestra.documents.trial import TrialResult
from orchestra.jobs.identity import replay_record

SHA = "5f32d5568047fc7b6adb120eeed8774be5e0e7b1f8d50d75f2fb5b761d8d3161"
STARTED = "2026-11-29T10:00:00.000000Z"


def trial_result(task: str, attempt: int = 1, **fields: Any) -> TrialResult:
    """A trial of `task` (full name) with every identity key filled in; `fields` override."""
    short = task.rpartition("/")[2]
    document: dict[str, Any] = {
        "trial_id": f"id-{short}-{attempt}",
        "trial_name": f"{short}__{attempt}",
        "job_name": "job",
        "task_name": task,
        "short_name": short,
        "layer": "regression",
        "attempt": attempt,
        "condition": "c",
        "manifest_sha256": SHA,
        "started_at": STARTED,
    }
    return TrialResult.model_validate(document | fields)


def job_config(name: str = "job", **fields: Any) -> JobConfig:
    """A job config as `orchestra benchmark` writes it; `fields` override top-level keys."""
    document: dict[str, Any] = {
        "job_name": name,
        "id": "6a26f1b0-4616-4e0d-84fc-b60b2a1801b3",
        "created_at": STARTED,
        "orchestrator_version": "0.1.0",
        "replay_identity": replay_record({"condition": SHA}).model_dump(),
        "plan": {"layer": "regression", "attempts": 1, "tasks": []},
        "manifest": {"path": "m.yaml", "sha256": SHA, "condition": "c", "normalized": {}},
        "endpoints": {
            "oracle": {"provider": "oracle", "api_key_env": None, "base_url": None, "env_keys": []}
        },
        "stack": {
            "mode": "embedded",
            "relay_ws_url": "ws://127.0.0.1:3600",
            "relay_http_url": "http://127.0.0.1:3600",
            "agent_relay_url": "ws://127.0.0.1:3600",
            "database": True,
        },
        "environment": "local",
        "options": {
            "n_concurrent": 1,
            "timeout_multiplier": 1.0,
            "keep_channels": False,
            "jobs_dir": "jobs",
            "state_dir": ".benchmark",
            "relay_port": 3600,
            "buzz_bin_dir": None,
            "endpoint_config": "endpoints/oracle.json",
            "artifact_root": ".",
        },
    }
    return JobConfig.model_validate(document | fields)


def log_record(**fields: Any) -> Record:
    """One event-log line as the orchestrator reads it (`fields` must name a known record)."""
    record = read_record(json.dumps(fields))
    assert record is not None, fields
    return record


def _counts(passes: int, scored: int) -> dict[str, Any]:
    """A §11 row of `scored` trials, `passes` of them with reward 1."""
    return {
        "planned": scored, "scored": scored, "errors": 0, "cancelled": 0, "running": 0,
        "not_started": 0, "pass_rate": passes / scored, "pass_rate_all": passes / scored,
        "tokens": {"input": 0, "cached_input": 0, "output": 0}, "cost_usd": 0.0,
        "mean_cost_usd": 0.0, "mean_trial_seconds": None,
    }  # fmt: skip


def report_document(tasks: dict[str, tuple[int, int]], condition: str = "c") -> ReportDocument:
    """A report.json of one condition whose regression tasks have these (passes, scored)."""
    rows = {
        name: _counts(passes, scored)
        | {"incomplete": False, "pass_at_k": None, "failing_dimensions": {}, "successes": passes}
        for name, (passes, scored) in tasks.items()
    }
    total = _counts(sum(p for p, _ in tasks.values()), sum(n for _, n in tasks.values()))
    group = total | {"pass_at_k": None, "n_tasks": len(tasks)}
    return ReportDocument.model_validate(
        {
            "generated_at": STARTED,
            "jobs": [],
            "conditions": [
                {
                    "condition": condition,
                    "manifest_sha256": SHA,
                    "oracle": True,
                    "jobs": [],
                    "layers": {"regression": group | {"tasks": rows}},
                    "totals": group,
                    "error_types": {},
                }
            ],
            "trials": [],
        }
    )
