"""Reading job directories back for aggregation (`orchestra summarize`, end-of-run summary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestra.jobs.jsonio import read_json_object
from orchestra.jobs.layout import scan_trials
from orchestra.paths import JobPaths
from orchestra.report.aggregate import JobRecord, PlannedTask


class JobDirError(Exception):
    pass


def record_from_config(config: dict[str, Any], path: Path) -> JobRecord:
    """The plan part of a job record from its `config.json` (KeyError/TypeError if malformed)."""
    plan = config["plan"]
    manifest = config["manifest"]
    return JobRecord(
        name=str(config["job_name"]),
        path=str(path),
        condition=str(manifest["condition"]),
        manifest_sha256=str(manifest["sha256"]),
        attempts=int(plan["attempts"]),
        tasks=[PlannedTask(str(t["name"]), str(t["layer"])) for t in plan["tasks"]],
        oracle=any(
            isinstance(e, dict) and e.get("provider") == "oracle"
            for e in (config.get("endpoints") or {}).values()
        ),
    )


def load_job_record(job_dir: Path) -> JobRecord:
    paths = JobPaths(job_dir)
    config = read_json_object(paths.config_json)
    if config is None:
        raise JobDirError(
            f"{paths.config_json}: missing or not a JSON object (not a job directory?)"
        )
    try:
        record = record_from_config(config, job_dir)
    except (KeyError, TypeError, ValueError) as error:
        raise JobDirError(f"{paths.config_json}: malformed ({error})") from None
    record.trials = [t.result for t in scan_trials(paths) if t.result is not None]
    return record
