"""`report.json`: everything measured in one or more jobs, per trial, task, layer and condition.

The condition / layer / task numbers are the §11 aggregation (`aggregate`), enriched with
per-metric pass counts; the trial entries add what a reader needs to explain a number: every
metric, the verifier's details, the error, the stop reason, usage, durations and the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestra.documents.enums import Phase, TrialStatus
from orchestra.documents.report import (
    AgentFiles,
    Durations,
    PendingSlot,
    PlannedTaskRecord,
    ReportDocument,
    ReportJob,
    ReportTrial,
    TrialFiles,
)
from orchestra.documents.summary import MetricCount, Outcomes, Summary
from orchestra.documents.trial import TrialResult
from orchestra.jobs.aggregate import JobRecord, agent_summaries, aggregate
from orchestra.jobs.run import job_records
from orchestra.jobs.tally import metric_passed, seconds_between
from orchestra.jsonio import read_json_object, utc_timestamp
from orchestra.paths import JobPaths, TrialPaths
from orchestra.report.stats.estimates import with_intervals


def _durations(result: TrialResult) -> Durations:
    timings = result.timings
    return Durations(
        total_seconds=round(seconds_between(result.started_at, result.finished_at), 6)
        if result.finished_at
        else None,
        phase_seconds={
            phase: timing.seconds for phase in Phase if (timing := timings.phase(phase)) is not None
        },
        agent_active_seconds=timings.agent_active_seconds,
    )


def _agent_ids(result: TrialResult, paths: TrialPaths) -> list[str]:
    ids = [agent.agent_id for agent in result.buzz.agents]
    if ids:
        return ids
    # An early setup error leaves no agent list; the logs on disk still name the agents.
    return sorted(p.name.removesuffix(".stderr.log") for p in paths.buzz_dir.glob("*.stderr.log"))


def _existing(path: Path) -> str | None:
    return str(path) if path.is_file() else None


def trial_files(result: TrialResult, paths: TrialPaths) -> TrialFiles:
    """The trial's files that exist, as paths; agent logs per agent id."""
    return TrialFiles(
        dir=str(paths.root),
        result_json=_existing(paths.result_json),
        config_json=_existing(paths.config_json),
        trial_log=_existing(paths.trial_log),
        oracle_log=_existing(paths.oracle_log),
        evidence_json=_existing(paths.evidence_json) or _existing(paths.artifacts_evidence_json),
        transcript_json=_existing(paths.transcript_json),
        evidence_error=_existing(paths.evidence_error_txt),
        reward_json=_existing(paths.reward_json),
        details_json=_existing(paths.details_json),
        verifier_stdout=_existing(paths.test_stdout),
        agents={
            agent_id: AgentFiles(
                system_prompt=_existing(paths.system_prompt(agent_id)),
                stdout=_existing(paths.stdout_log(agent_id)),
                stderr=_existing(paths.stderr_log(agent_id)),
                events=_existing(paths.events_log(agent_id)),
                trajectory=_existing(paths.trajectory(agent_id)),
            )
            for agent_id in _agent_ids(result, paths)
        },
    )


def trial_entry(job: JobRecord, result: TrialResult) -> ReportTrial:
    paths = JobPaths(Path(job.path)).trial(result.trial_name)
    rewards = result.rewards
    return ReportTrial(
        job_name=job.name,
        trial_name=result.trial_name,
        trial_id=result.trial_id,
        task_name=result.task_name,
        short_name=result.short_name,
        layer=result.layer,
        attempt=result.attempt,
        condition=result.condition,
        manifest_sha256=result.manifest_sha256,
        status=result.status,
        phase=result.phase,
        stop_reason=result.stop_reason,
        reward=result.reward,
        succeeded=result.status is TrialStatus.SCORED and metric_passed(result.reward),
        rewards=rewards,
        failing_metrics=sorted(
            name for name, value in (rewards or {}).items() if not metric_passed(value)
        ),
        verifier=result.verifier,
        verifier_inputs=result.verifier_inputs,
        details=read_json_object(paths.details_json),
        exception_info=result.exception_info,
        error_cause=(result.exception_info.exception_type.cause if result.exception_info else None),
        budget_exceeded=result.budget_exceeded,
        tokens=result.tokens,
        cost_usd=result.cost_usd,
        accounting=result.accounting,
        started_at=result.started_at,
        finished_at=result.finished_at,
        durations=_durations(result),
        agents=agent_summaries([result]),
        files=trial_files(result, paths),
    )


def _trial_order(trial: TrialResult) -> tuple[str, int, str]:
    return (trial.task_name, trial.attempt, trial.trial_name)


def metric_counts(trials: Sequence[TrialResult]) -> dict[str, MetricCount]:
    """Per metric over the scored trials: how many held, of how many carried it, and the rate."""
    counts: dict[str, tuple[int, int]] = {}
    for trial in trials:
        if trial.status is not TrialStatus.SCORED:
            continue
        for name, value in (trial.rewards or {}).items():
            passed, scored = counts.get(name, (0, 0))
            counts[name] = (passed + metric_passed(value), scored + 1)
    return {
        name: MetricCount(passed=passed, scored=scored, rate=passed / scored)
        for name, (passed, scored) in sorted(counts.items())
    }


def stop_reason_counts(trials: Sequence[TrialResult]) -> dict[str, int]:
    """How the agent phase ended, over every trial (`none` when it never ended normally)."""
    counts: dict[str, int] = {}
    for trial in trials:
        reason = trial.stop_reason.value if trial.stop_reason else "none"
        counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items()))


def _fill_outcomes(row: Outcomes, trials: Sequence[TrialResult]) -> None:
    row.metrics = metric_counts(trials)
    row.stop_reasons = stop_reason_counts(trials)


def _add_outcomes(summary: Summary, records: Sequence[JobRecord]) -> None:
    """Per task, layer and condition: metric pass counts and stop reasons, beside §11's numbers."""
    for condition in summary.conditions:
        key = (
            condition.condition,
            condition.manifest_sha256,
            tuple(sorted(condition.models.items())),
        )
        of_condition = [t for r in records if r.condition_key == key for t in r.trials]
        for layer_name, layer in condition.layers.items():
            of_layer = [t for t in of_condition if t.layer == layer_name]
            _fill_outcomes(layer, of_layer)
            for task_name, task in layer.tasks.items():
                _fill_outcomes(task, [t for t in of_layer if t.task_name == task_name])
        _fill_outcomes(condition.totals, of_condition)


def pending_slots(job: JobRecord) -> list[PendingSlot]:
    """Planned (task, attempt) slots with no trial directory: the job stopped before them."""
    started = {t.slot for t in job.trials}
    return [
        PendingSlot(task_name=task.name, layer=task.layer, attempt=attempt)
        for attempt in range(1, job.attempts + 1)
        for task in job.tasks
        if (task.name, attempt) not in started
    ]


def build_report(paths: Sequence[Path]) -> ReportDocument:
    """The report document for these run or job directories (a run as all its jobs, those
    not started too); `DocumentError` if one is neither."""
    return report_of_records([record for path in paths for record in job_records(path)])


def report_job(record: JobRecord) -> ReportJob:
    return ReportJob(
        name=record.name,
        path=record.path,
        condition=record.condition,
        manifest_sha256=record.manifest_sha256,
        models=record.models,
        attempts=record.attempts,
        oracle=record.oracle,
        planned_tasks=[
            PlannedTaskRecord(
                name=t.name, layer=t.layer, digest=t.digest, verifier_digest=t.verifier_digest
            )
            for t in record.tasks
        ],
        pending=pending_slots(record),
    )


def report_of_records(records: Sequence[JobRecord]) -> ReportDocument:
    """The report document of these jobs."""
    summary = with_intervals(aggregate(records))
    _add_outcomes(summary, records)
    return ReportDocument(
        generated_at=utc_timestamp(),
        jobs=[report_job(record) for record in records],
        conditions=summary.conditions,
        trials=[
            trial_entry(record, result)
            for record in records
            for result in sorted(record.trials, key=_trial_order)
        ],
    )
