"""Run by the harbor venv's Python (tests/harbor_real.py), not by pytest: loads a jobs
directory the way Harbor does and prints, as JSON, what Harbor made of it.

Every job's and trial's `config.json` and `result.json` through Harbor's own `JobConfig`,
`JobResult`, `TrialConfig` and `TrialResult` (a validation error is a problem, and so is a key
Harbor's models do not have, which Harbor would silently drop); then the viewer's
`JobScanner` (`harbor view`'s loader, which returns None for a file it cannot parse) and the
viewer's own API (`create_app`, served in process) for the job list, each job, its trial list,
each trial and its trajectory. With `--task-checksums` (runs made in the test session, whose
task directories are as the run read them), a trial's `task_checksum` must be Harbor's
`Task.checksum` of its task directory wherever Harbor loads that directory as a task.

Output: {"harbor_version", "problems": [...], "jobs": {job: {"config", "result", "trials":
{trial: {"config", "result"}}}}, "viewer": {"jobs": [...], "trials": {job: [...]}}}.
"""

import json
import sys
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult
from harbor.models.task.task import Task
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.result import TrialResult
from harbor.viewer import create_app
from harbor.viewer.scanner import JobScanner
from pydantic import BaseModel, ValidationError


def unknown_keys(model: object, data: object, where: str) -> list[str]:
    """Keys of `data` that the parsed `model` has no field for, at any depth."""
    if isinstance(model, BaseModel) and isinstance(data, dict):
        known = type(model).model_fields.keys() | type(model).model_computed_fields.keys()
        found = [
            f"{where}.{key}: not a field of {type(model).__name__}"
            for key in data
            if key not in known
        ]
        for key, value in data.items():
            if key in type(model).model_fields:
                found += unknown_keys(getattr(model, key), value, f"{where}.{key}")
        return found
    if isinstance(model, list) and isinstance(data, list):
        return [
            p
            for i, (m, d) in enumerate(zip(model, data, strict=True))
            for p in unknown_keys(m, d, f"{where}[{i}]")
        ]
    if isinstance(model, dict) and isinstance(data, dict):
        return [
            p
            for key, value in data.items()
            if key in model
            for p in unknown_keys(model[key], value, f"{where}.{key}")
        ]
    return []


def load(cls: type[BaseModel], path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = cls.model_validate(data)
    except (OSError, ValueError, ValidationError) as error:
        problems.append(f"{path}: {cls.__name__}: {error}")
        return None
    problems.extend(f"{path}: {p}" for p in unknown_keys(model, data, cls.__name__))
    return model.model_dump(mode="json")


def checksum_problems(result: dict[str, Any] | None, where: str) -> list[str]:
    if result is None:
        return []
    try:
        task = Task(task_dir=Path(result["task_id"]["path"]))
    except Exception:  # not a Harbor-format task (our buzz-native tasks): nothing to compare
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        expected = task.checksum
    if result["task_checksum"] != expected:
        return [f"{where}: task_checksum {result['task_checksum']}, Harbor's {expected}"]
    return []


def check(jobs_dir: Path, *, task_checksums: bool) -> dict[str, Any]:
    problems: list[str] = []
    scanner = JobScanner(jobs_dir)
    jobs: dict[str, Any] = {}
    for job in scanner.list_jobs():
        job_dir = jobs_dir / job
        trials = {}
        for trial in scanner.list_trials(job):
            trials[trial] = {
                "config": load(TrialConfig, job_dir / trial / "config.json", problems),
                "result": load(TrialResult, job_dir / trial / "result.json", problems),
            }
            if task_checksums:
                problems.extend(checksum_problems(trials[trial]["result"], f"{job}/{trial}"))
            if scanner.get_trial_config(job, trial) is None:
                problems.append(f"{job}/{trial}: the viewer's scanner cannot load config.json")
            if scanner.get_trial_result(job, trial) is None:
                problems.append(f"{job}/{trial}: the viewer's scanner cannot load result.json")
        jobs[job] = {
            "config": load(JobConfig, job_dir / "config.json", problems),
            "result": load(JobResult, job_dir / "result.json", problems),
            "trials": trials,
        }
        if scanner.get_job_config(job) is None or scanner.get_job_result(job) is None:
            problems.append(f"{job}: the viewer's scanner cannot load the job's documents")

    client = TestClient(create_app(jobs_dir))

    def get(url: str) -> Any:
        response = client.get(url)
        if response.status_code != 200:
            problems.append(f"viewer GET {url}: {response.status_code} {response.text[:300]}")
            return None
        return response.json()

    viewer: dict[str, Any] = {"jobs": (get("/api/jobs") or {}).get("items", []), "trials": {}}
    for job, documents in jobs.items():
        get(f"/api/jobs/{job}")
        viewer["trials"][job] = (get(f"/api/jobs/{job}/trials") or {}).get("items", [])
        for trial in documents["trials"]:
            get(f"/api/jobs/{job}/trials/{trial}")
            if get(f"/api/jobs/{job}/trials/{trial}/trajectory") is None:
                problems.append(f"viewer: {job}/{trial} has no trajectory")
    return {
        "harbor_version": version("harbor"),
        "problems": problems,
        "jobs": jobs,
        "viewer": viewer,
    }


if __name__ == "__main__":
    json.dump(check(Path(sys.argv[1]), task_checksums="--task-checksums" in sys.argv), sys.stdout)
