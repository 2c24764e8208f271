"""What every export reads: the jobs of a run (or one job) and their trials that wrote both
documents, through `orchestra.documents`; and the one-line errors an export ends with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestra.config.errors import display_path
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig
from orchestra.documents.run import RunRecord
from orchestra.documents.trial import RosterAgent, TrialConfig, TrialResult
from orchestra.errors import OrchestraError
from orchestra.jobs.layout import load_job_config, scan_trials
from orchestra.paths import JobPaths, RunPaths, TrialPaths


class ExportError(OrchestraError):
    """The export cannot be written (exit 1); `str()` is one line naming the path."""


@dataclass(frozen=True)
class ExportedJob:
    job_name: str
    path: Path
    n_trials: int


@dataclass(frozen=True)
class SourceTrial:
    paths: TrialPaths
    config: TrialConfig
    result: TrialResult


@dataclass(frozen=True)
class SourceJob:
    paths: JobPaths
    config: JobConfig
    trials: list[SourceTrial]

    @property
    def roster(self) -> list[RosterAgent]:
        """Every trial of a job runs the job's one manifest, so any trial's roster is the job's."""
        return self.trials[0].config.roster if self.trials else []


def source_job_dirs(source: Path) -> list[Path]:
    """The job directories of a run that were started, or `[source]` for a job directory."""
    run = RunPaths(source)
    if run.run_json.is_file():
        record = RunRecord.load(run.run_json)
        return [
            run.job(job.job_name).root
            for job in record.jobs
            if run.job(job.job_name).config_json.is_file()
        ]
    if not JobPaths(source).config_json.is_file():
        raise DocumentError(display_path(source), "", "neither a run nor a job directory")
    return [source]


def load_source_job(job_dir: Path) -> SourceJob:
    """The job's config and its trials that wrote both documents (others died before)."""
    paths = JobPaths(job_dir)
    trials = []
    for trial in scan_trials(paths):
        trial_paths = paths.trial(trial.name)
        config = TrialConfig.load_if_readable(trial_paths.config_json)
        if trial.result is not None and config is not None:
            trials.append(SourceTrial(trial_paths, config, trial.result))
    return SourceJob(paths, load_job_config(paths), trials)


def orchestrator_agent(roster: list[RosterAgent]) -> RosterAgent | None:
    return next((agent for agent in roster if agent.kind == "orchestrator"), None)
