"""A run or job directory in Harbor's jobs-directory format (Harbor 0.26, checked
by the real package in the tests: docs/decisions.md D64, D76), so that `harbor view OUT_DIR` shows
it.

Every job becomes `OUT_DIR/<job name>/` with Harbor's `config.json` and `result.json`; every
trial `OUT_DIR/<job name>/<trial name>/` with its `config.json`, `result.json`, the
orchestrator agent's ATIF trajectory as `agent/trajectory.json`, each teammate's as
`agent/trajectories/<agent id>.json`, and the verifier's files under `verifier/`. Our documents
are read through `orchestra.documents`; only files the trial's secret scan already covered
(§7.15) are copied.

Our environments are not Harbor's: each is written in Harbor's custom-environment form, the
`import_path` of our class that ran the trial, with our kind in `kwargs` (`buzz_orchestra_env`),
so Harbor neither rejects it nor takes a local run for one of its Docker runs.
"""

from __future__ import annotations

import shutil
import uuid
from datetime import datetime
from pathlib import Path
from typing import TypeVar, overload

from orchestra.config.errors import display_path
from orchestra.documents.enums import EnvKind
from orchestra.documents.job import JobConfig
from orchestra.documents.job import JobResult as OurJobResult
from orchestra.documents.trial import PhaseTiming, RosterAgent
from orchestra.documents.trial import TrialConfig as OurTrialConfig
from orchestra.documents.trial import TrialResult as OurTrialResult
from orchestra.export import harbor_documents as harbor
from orchestra.export.sources import (
    ExportedJob,
    ExportError,
    SourceJob,
    load_source_job,
    orchestrator_agent,
    source_job_dirs,
)
from orchestra.paths import TrialPaths

TRAJECTORY_NAME = "trajectory.json"
TEAMMATE_TRAJECTORIES_DIR = "trajectories"
#: The class that runs a trial in each of our environments, as Harbor's `import_path` names one
ENVIRONMENT_IMPORT_PATHS = {
    EnvKind.LOCAL: "orchestra.trial.env.local:LocalEnvironment",
    EnvKind.DOCKER: "orchestra.trial.env.docker:DockerEnvironment",
}
ENVIRONMENT_KIND_KEY = "buzz_orchestra_env"


def export_harbor(source: Path, out_dir: Path, *, force: bool = False) -> list[ExportedJob]:
    """Write every job of the run (or the one job) `source` into `out_dir`.

    `DocumentError` when `source` is neither a run nor a job or a document is malformed;
    `ExportError` when `out_dir` is not empty (without `force`) or is not a directory.
    """
    jobs = [load_source_job(job_dir) for job_dir in source_job_dirs(source)]
    prepare_out_dir(out_dir, [job.config.job_name for job in jobs], force=force)
    return [export_job(job, out_dir) for job in jobs]


def prepare_out_dir(out_dir: Path, job_names: list[str], *, force: bool) -> None:
    """Refuse a non-empty `out_dir` unless `force`; with `force`, remove only the job
    directories this export writes (whatever else is there stays)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"{display_path(out_dir)}: exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not force:
            raise ExportError(
                f"{display_path(out_dir)}: not empty (pass --force to replace the exported jobs)"
            )
        for name in job_names:
            target = out_dir / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)


def export_job(job: SourceJob, out_dir: Path) -> ExportedJob:
    config, paths = job.config, job.paths
    job_out = out_dir / config.job_name
    job_out.mkdir()
    job_id = as_uuid(config.id)
    agent = agent_config(config, job.roster)
    trial_results = [
        export_trial(trial.paths, trial.config, trial.result, config, agent, job_id, job_out)
        for trial in job.trials
    ]
    harbor_config = harbor.JobConfig(
        job_name=config.job_name,
        jobs_dir=str(out_dir.absolute()),
        n_attempts=config.plan.attempts,
        n_concurrent_trials=config.options.n_concurrent,
        timeout_multiplier=config.options.trial.timeout_multiplier,
        environment=environment_config(config.environment),
        agents=[agent],
        tasks=[harbor.TaskConfig(path=task.dir) for task in config.plan.tasks],
    )
    write(job_out / "config.json", harbor_config)
    our_result = OurJobResult.load_if_readable(paths.result_json)
    started_at = timestamp(our_result.started_at if our_result else config.created_at)
    result = harbor.JobResult(
        id=job_id,
        started_at=started_at,
        updated_at=timestamp(our_result.updated_at) if our_result else started_at,
        finished_at=timestamp(our_result.finished_at) if our_result else None,
        n_total_trials=config.plan.n_trials,
        stats=job_stats(trial_results, config.plan.n_trials),
        trial_results=trial_results,
    )
    write(job_out / "result.json", result)
    return ExportedJob(config.job_name, job_out, len(trial_results))


def export_trial(
    paths: TrialPaths,
    config: OurTrialConfig,
    result: OurTrialResult,
    job: JobConfig,
    agent: harbor.AgentConfig,
    job_id: uuid.UUID,
    job_out: Path,
) -> harbor.TrialResult:
    out = job_out / paths.name
    out.mkdir()
    lead = orchestrator_agent(config.roster)
    trial_config = harbor.TrialConfig(
        task=harbor.TaskConfig(path=config.task.dir),
        trial_name=config.trial_name,
        trials_dir=str(out.parent.absolute()),
        timeout_multiplier=job.options.trial.timeout_multiplier,
        agent=agent,
        environment=environment_config(config.environment),
        verifier=harbor.VerifierConfig(override_timeout_sec=config.timeouts.verifier_seconds),
        job_id=job_id,
    )
    write(out / "config.json", trial_config)
    exported = harbor.TrialResult(
        id=as_uuid(result.trial_id),
        task_name=result.task_name,
        trial_name=result.trial_name,
        trial_uri=out.absolute().as_uri(),
        task_id=harbor.LocalTaskId(path=config.task.dir),
        source=dataset_name(config.task.dir),
        task_checksum=config.task.harbor_checksum or config.task.digest,
        config=trial_config,
        agent_info=harbor.AgentInfo(
            name=harbor.HARBOR_AGENT_NAME,
            version=job.orchestrator_version,
            model_info=model_info(lead, job),
        ),
        agent_result=agent_context(result),
        verifier_result=harbor.VerifierResult(rewards=result.rewards)
        if result.rewards is not None
        else None,
        exception_info=exception_info(result),
        started_at=timestamp(result.started_at),
        finished_at=timestamp(result.finished_at),
        environment_setup=timing(result.timings.setup),
        agent_execution=timing(result.timings.agent),
        verifier=timing(result.timings.verify),
    )
    write(out / "result.json", exported)
    copy_trajectories(paths, result, lead, out / "agent")
    if paths.verifier_dir.is_dir():
        shutil.copytree(paths.verifier_dir, out / "verifier", symlinks=True)
    return exported


def copy_trajectories(
    paths: TrialPaths, result: OurTrialResult, lead: RosterAgent | None, agent_out: Path
) -> None:
    """The orchestrator agent's trajectory as `trajectory.json`, teammates' beside it."""
    agent_out.mkdir()
    for agent_id, relative in sorted(result.trajectories.items()):
        source = paths.root / relative
        if not source.is_file():
            continue
        if lead is not None and agent_id == lead.agent_id:
            target = agent_out / TRAJECTORY_NAME
        else:
            target = agent_out / TEAMMATE_TRAJECTORIES_DIR / f"{agent_id}.json"
            target.parent.mkdir(exist_ok=True)
        shutil.copyfile(source, target)


# --- field conversions ---------------------------------------------------------------------------


def as_uuid(value: str) -> uuid.UUID:
    """Our id when it is a UUID (every id the orchestrator writes), else a stable UUID of it."""
    try:
        return uuid.UUID(value)
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"buzz-orchestra:{value}")


@overload
def timestamp(value: str) -> datetime: ...
@overload
def timestamp(value: str | None) -> datetime | None: ...
def timestamp(value: str | None) -> datetime | None:
    """A §10.1 timestamp (`…Z`) as the aware datetime Harbor's fields hold."""
    return datetime.fromisoformat(value) if value is not None else None


def timing(phase: PhaseTiming | None) -> harbor.TimingInfo | None:
    if phase is None:
        return None
    return harbor.TimingInfo(
        started_at=timestamp(phase.started_at), finished_at=timestamp(phase.finished_at)
    )


def model_info(lead: RosterAgent | None, job: JobConfig) -> harbor.ModelInfo | None:
    if lead is None or lead.endpoint not in job.endpoints:
        return None
    provider = job.endpoints[lead.endpoint].provider
    return harbor.ModelInfo(name=lead.model_revision, provider=str(provider))


def agent_config(job: JobConfig, roster: list[RosterAgent]) -> harbor.AgentConfig:
    """Harbor's one agent: the team as a whole, named by its orchestrator agent's model."""
    lead = orchestrator_agent(roster)
    return harbor.AgentConfig(
        name=harbor.HARBOR_AGENT_NAME,
        model_name=lead.model_revision if lead is not None else None,
        kwargs={"condition": job.manifest.condition, "manifest_sha256": job.manifest.sha256},
    )


def agent_context(result: OurTrialResult) -> harbor.AgentContext | None:
    if result.tokens is None:
        return None
    return harbor.AgentContext(
        n_input_tokens=result.tokens.input,
        n_cache_tokens=result.tokens.cached_input,
        n_output_tokens=result.tokens.output,
        cost_usd=result.cost_usd,
    )


def exception_info(result: OurTrialResult) -> harbor.ExceptionInfo | None:
    info = result.exception_info
    if info is None:
        return None
    return harbor.ExceptionInfo(
        exception_type=str(info.exception_type),
        exception_message=info.exception_message,
        exception_traceback=info.exception_traceback,
        occurred_at=timestamp(info.occurred_at),
    )


def environment_config(kind: EnvKind) -> harbor.EnvironmentConfig:
    return harbor.EnvironmentConfig(
        import_path=ENVIRONMENT_IMPORT_PATHS[kind], kwargs={ENVIRONMENT_KIND_KEY: str(kind)}
    )


def dataset_name(task_dir: str) -> str:
    """The task's dataset: the directory holding it, as Harbor names a local dataset."""
    return Path(task_dir).parent.name or "adhoc"


def job_stats(trials: list[harbor.TrialResult], n_total_trials: int) -> harbor.JobStats:
    """Harbor's job stats, counted as Harbor's `JobStats.increment` counts finished trials: per
    agent, model and dataset the trials with rewards (by reward value, and their mean as the
    default metric) and the trials that ended in an exception (by type)."""
    evals: dict[str, harbor.AgentDatasetStats] = {}
    rewards_by_eval: dict[str, list[dict[str, float]]] = {}
    for trial in trials:
        model = trial.agent_info.model_info.name if trial.agent_info.model_info else None
        key = "__".join(part for part in (trial.agent_info.name, model, trial.source) if part)
        stats = evals.setdefault(
            key,
            harbor.AgentDatasetStats(
                n_trials=0, n_errors=0, metrics=[], reward_stats={}, exception_stats={}
            ),
        )
        rewards = trial.verifier_result.rewards if trial.verifier_result else None
        if trial.exception_info is not None:
            stats.n_errors += 1
            stats.exception_stats.setdefault(trial.exception_info.exception_type, []).append(
                trial.trial_name
            )
        elif rewards:
            stats.n_trials += 1
            rewards_by_eval.setdefault(key, []).append(rewards)
            for name, value in rewards.items():
                stats.reward_stats.setdefault(name, {}).setdefault(value, []).append(
                    trial.trial_name
                )
    for key, rewards_list in rewards_by_eval.items():
        evals[key].metrics = [mean_metric(rewards_list)]
    contexts = [trial.agent_result for trial in trials if trial.agent_result is not None]
    n_errored = sum(stats.n_errors for stats in evals.values())
    return harbor.JobStats(
        n_completed_trials=len(trials),
        n_errored_trials=n_errored,
        n_running_trials=0,
        n_pending_trials=max(n_total_trials - len(trials), 0),
        n_cancelled_trials=0,
        n_retries=0,
        evals=evals,
        n_input_tokens=total([c.n_input_tokens for c in contexts]),
        n_cache_tokens=total([c.n_cache_tokens for c in contexts]),
        n_output_tokens=total([c.n_output_tokens for c in contexts]),
        cost_usd=total([c.cost_usd for c in contexts]),
    )


def mean_metric(rewards_list: list[dict[str, float]]) -> dict[str, float]:
    """Harbor's `Mean` metric: `{"mean": …}` for one reward key, else the mean of each key."""
    keys = sorted({key for rewards in rewards_list for key in rewards})
    if len(keys) <= 1:
        values = [next(iter(rewards.values()), 0.0) for rewards in rewards_list]
        return {"mean": sum(values) / len(values)}
    return {
        key: sum(rewards.get(key, 0.0) for rewards in rewards_list) / len(rewards_list)
        for key in keys
    }


Number = TypeVar("Number", int, float)


def total(values: list[Number | None]) -> Number | None:
    """The sum of the values given, None when none is (Harbor's token and cost totals)."""
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def write(path: Path, document: harbor.Part) -> None:
    path.write_text(document.to_json(), encoding="utf-8")
