"""Runs and jobs as Inspect AI eval logs (docs/decisions.md D77), written with `inspect_ai`'s own
log models and writer, for `inspect view OUT` and Inspect's dataframes (messages and transcript
events from each agent's trajectory: `inspect_transcript`).

One `.eval` log per job; one sample per trial (id the task, epoch the attempt) holding every
agent's conversation from its ATIF trajectory (the orchestrator agent's first, each message's
`metadata.agent_id` naming its agent), the verifier's rewards as scores (one scorer per reward
key, `reward` first), a harness error as the sample's error, token usage by model and by agent,
and the trial's timings. With `inspect_transcript`, the only modules that import `inspect_ai`
(the optional `[inspect]` extra): the CLI imports this one when the command runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    EvalStatus,
    write_eval_log,
)
from inspect_ai.model import (
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Score

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.config.errors import display_path
from orchestra.documents.job import JobConfig
from orchestra.documents.job import JobResult as OurJobResult
from orchestra.documents.trial import RosterAgent
from orchestra.export.inspect_transcript import agent_transcript
from orchestra.export.sources import (
    ExportedJob,
    ExportError,
    SourceJob,
    SourceTrial,
    load_source_job,
    orchestrator_agent,
    source_job_dirs,
)

LOG_SUFFIX = ".eval"
HEADLINE_REWARD = "reward"
PACKAGE = "buzz-orchestra"


def export_inspect(sources: list[Path], out_dir: Path, *, force: bool = False) -> list[ExportedJob]:
    """Write one eval log per job of every run (or job) in `sources` into `out_dir`.

    `DocumentError` when a source is neither a run nor a job or a document is malformed;
    `ExportError` when `out_dir` is not a directory or, without `force`, a log exists already.
    """
    jobs = [load_source_job(job_dir) for source in sources for job_dir in source_job_dirs(source)]
    targets = [out_dir / log_name(job.config) for job in jobs]
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"{display_path(out_dir)}: exists and is not a directory")
    if not force:
        for target in targets:
            if target.exists():
                raise ExportError(
                    f"{display_path(target)}: exists (pass --force to replace the exported logs)"
                )
    out_dir.mkdir(parents=True, exist_ok=True)
    exported = []
    for job, target in zip(jobs, targets, strict=True):
        write_eval_log(eval_log(job), str(target), format="eval")
        exported.append(ExportedJob(job.config.job_name, target, len(job.trials)))
    return exported


def log_name(job: JobConfig) -> str:
    """Inspect's `<created>_<task>_<task id>.eval`, which `inspect view` lists by task (it
    splits the name at `_` and the id at `-`, so neither may hold them)."""
    created = datetime.fromisoformat(job.created_at).strftime("%Y-%m-%dT%H-%M-%S+00-00")
    return f"{created}_{job.job_name.replace('_', '-')}_{inspect_id(job)}{LOG_SUFFIX}"


def inspect_id(job: JobConfig) -> str:
    """The job's id as Inspect's ids are written: without dashes."""
    return job.id.replace("-", "")


def eval_log(job: SourceJob) -> EvalLog:
    config = job.config
    our_result = OurJobResult.load_if_readable(job.paths.result_json)
    samples = [sample(job.config, trial) for trial in job.trials]
    lead = orchestrator_agent(job.roster)
    return EvalLog(
        status=log_status(our_result),
        eval=EvalSpec(
            eval_id=inspect_id(config),
            run_id=inspect_id(config),
            created=config.created_at,
            task=config.job_name,
            task_id=inspect_id(config),
            dataset=EvalDataset(
                name=config.job_name,
                samples=config.plan.n_trials,
                sample_ids=sorted({trial.result.task_name for trial in job.trials}),
            ),
            model=model_name(config, lead) if lead is not None else "none/none",
            config=EvalConfig(epochs=config.plan.attempts),
            packages={PACKAGE: config.orchestrator_version},
            metadata={
                "condition": config.manifest.condition,
                "manifest_sha256": config.manifest.sha256,
                "environment": str(config.environment),
            },
        ),
        results=EvalResults(
            total_samples=config.plan.n_trials,
            completed_samples=sum(1 for s in samples if s.error is None),
            scores=eval_scores(samples),
        ),
        stats=EvalStats(
            started_at=our_result.started_at if our_result else config.created_at,
            completed_at=(our_result.finished_at or "") if our_result else "",
            model_usage=sum_usage(usage for s in samples for usage in s.model_usage.items()),
            role_usage=sum_usage(usage for s in samples for usage in s.role_usage.items()),
        ),
        samples=samples,
    )


def log_status(result: OurJobResult | None) -> EvalStatus:
    if result is None or result.finished_at is None:
        return "started"
    return "cancelled" if result.stopped is not None else "success"


def sample(job: JobConfig, trial: SourceTrial) -> EvalSample:
    result, config = trial.result, trial.config
    roster = {agent.agent_id: agent for agent in config.roster}
    lead = orchestrator_agent(config.roster)
    conversations = trajectories(trial, lead)
    transcripts = [
        agent_transcript(
            trajectory,
            agent_id,
            model_name(job, roster[agent_id]) if agent_id in roster else agent_id,
        )
        for agent_id, trajectory in conversations
    ]
    posted = buzz_messages(trial)
    request = posted.get(result.buzz.task_event_id or "")
    answer = posted.get(result.buzz.completion_message_id or "")
    role_usage = {
        agent_id: ModelUsage(
            input_tokens=tokens.input - tokens.cached_input,  # Inspect's excludes cache reads
            input_tokens_cache_read=tokens.cached_input,
            output_tokens=tokens.output,
            total_tokens=tokens.input + tokens.output,
            total_cost=tokens.cost_usd,
        )
        for agent_id, tokens in (result.tokens.per_agent if result.tokens else {}).items()
    }
    model_usage = sum_usage(
        (model_name(job, roster[agent_id]) if agent_id in roster else agent_id, usage)
        for agent_id, usage in role_usage.items()
    )
    info = result.exception_info
    return EvalSample(
        id=result.task_name,
        epoch=result.attempt,
        uuid=result.trial_id,
        input=request or first_user_message(conversations) or result.task_name,
        target="",
        messages=[message for transcript in transcripts for message in transcript.messages],
        events=[event for transcript in transcripts for event in transcript.events],
        output=ModelOutput.from_content(model_name(job, lead), answer)
        if answer is not None and lead is not None
        else ModelOutput(),
        scores={
            # the viewer's Answer column is a score's answer: the message that ended the trial
            name: Score(value=value, answer=answer)
            for name, value in sorted(
                (result.rewards or {}).items(), key=lambda item: item[0] != HEADLINE_REWARD
            )
        }
        or None,
        error=EvalError(
            message=f"{info.exception_type}: {info.exception_message}",
            traceback=info.exception_traceback,
            traceback_ansi=info.exception_traceback,
        )
        if info is not None
        else None,
        model_usage=model_usage,
        role_usage=role_usage,
        started_at=result.started_at,
        completed_at=result.finished_at,
        total_time=seconds_between(result.started_at, result.finished_at),
        working_time=result.timings.agent_active_seconds or None,
        metadata={
            "trial_name": result.trial_name,
            "status": str(result.status),
            "stop_reason": str(result.stop_reason) if result.stop_reason else None,
            "task_dir": config.task.dir,
            "agents": {
                agent.agent_id: f"{agent.role} ({model_name(job, agent)})"
                for agent in config.roster
            },
        },
    )


def trajectories(trial: SourceTrial, lead: RosterAgent | None) -> list[tuple[str, Trajectory]]:
    """Each agent's ATIF trajectory that was written, the orchestrator agent's first."""
    found = []
    for agent_id, relative in sorted(
        trial.result.trajectories.items(),
        key=lambda item: (lead is None or item[0] != lead.agent_id, item[0]),
    ):
        path = trial.paths.root / relative
        if path.is_file():
            found.append((agent_id, Trajectory.model_validate_json(path.read_bytes())))
    return found


def buzz_messages(trial: SourceTrial) -> dict[str, str]:
    """Message id -> content of the channel's messages, from the trial's evidence (§8.2): the
    user's request is the sample's input, the message that ended the trial its answer."""
    for path in (trial.paths.evidence_json, trial.paths.artifacts_evidence_json):
        if path.is_file():
            try:
                evidence = json.loads(path.read_bytes())
            except ValueError:
                return {}
            messages = evidence.get("messages") if isinstance(evidence, dict) else None
            return {
                message["id"]: message["content"]
                for message in messages or []
                if isinstance(message, dict)
                and isinstance(message.get("id"), str)
                and isinstance(message.get("content"), str)
            }
    return {}


def first_user_message(conversations: list[tuple[str, Trajectory]]) -> str | None:
    for _, trajectory in conversations[:1]:
        for step in trajectory.steps:
            if step.source == "user":
                return step.message
    return None


def model_name(job: JobConfig, agent: RosterAgent) -> str:
    """Inspect's `provider/model` for an agent's endpoint and model."""
    endpoint = job.endpoints.get(agent.endpoint)
    provider = str(endpoint.provider) if endpoint is not None else agent.endpoint
    return f"{provider}/{agent.model_revision}"


def eval_scores(samples: list[EvalSample]) -> list[EvalScore]:
    """Per reward key, the mean over the samples the verifier scored."""
    values: dict[str, list[float]] = {}
    for each in samples:
        for name, score in (each.scores or {}).items():
            values.setdefault(name, []).append(score.as_float())
    return [
        EvalScore(
            name=name,
            scorer=name,
            scored_samples=len(scores),
            unscored_samples=len(samples) - len(scores),
            metrics={"mean": EvalMetric(name="mean", value=sum(scores) / len(scores))},
        )
        for name, scores in values.items()
    ]


def sum_usage(items: Iterable[tuple[str, ModelUsage]]) -> dict[str, ModelUsage]:
    totals: dict[str, ModelUsage] = {}
    for key, usage in items:
        totals[key] = totals[key] + usage if key in totals else usage
    return totals


def seconds_between(start: str, end: str | None) -> float | None:
    if end is None:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
