"""`orchestra leaderboard`: conditions ranked, each with its interval, and who beats whom.

Jobs are pooled by condition hash: the condition name, its manifest, the endpoint fingerprint
(§2.5: provider, base URL, settings and the model id sent) and the timeout multiplier. Two runs of one name that differ in any of
those are never pooled silently: they are shown apart, each labelled with what differs. Each
entry shows the mean pass rate over tasks with its 95 % interval, the §11.1 pass rate, pass^k,
cost, tokens and mean time per trial; below, every pair compared as `orchestra compare` would
(paired by task, the suite's exact test), Holm-adjusted over the pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestra.documents.report import ReportDocument
from orchestra.jobs.aggregate import JobRecord
from orchestra.jobs.layout import load_job_config
from orchestra.jobs.run import job_records
from orchestra.paths import JobPaths
from orchestra.report.compare.comparison import side_of_report
from orchestra.report.leaderboard.board import Entry, Leaderboard, PassHatK
from orchestra.report.leaderboard.pairwise import pairwise
from orchestra.report.report_json import report_of_records
from orchestra.report.text.summary import largest_k


@dataclass(frozen=True)
class ConditionKey:
    condition: str
    manifest_sha256: str
    endpoints: str  # hash of the endpoint fingerprint (§2.5)
    timeout_multiplier: float | None
    models: tuple[tuple[str, str], ...] = ()  # endpoint name -> model id sent


def condition_key(record: JobRecord) -> ConditionKey:
    endpoints, multiplier = "", None
    if record.started:
        config = load_job_config(JobPaths(Path(record.path)))
        endpoints = config.replay_identity.fields.get("endpoints", "")
        multiplier = config.options.trial.timeout_multiplier
    models = tuple(sorted(record.models.items()))
    return ConditionKey(record.condition, record.manifest_sha256, endpoints, multiplier, models)


def _labels(keys: Sequence[ConditionKey]) -> dict[ConditionKey, str]:
    """The condition name, plus what tells apart keys that share it."""
    labels = {}
    for key in keys:
        same_name = [other for other in keys if other.condition == key.condition]
        parts = []
        if len({k.manifest_sha256 for k in same_name}) > 1:
            parts.append(f"manifest {key.manifest_sha256[:8]}")
        if len({k.models for k in same_name}) > 1:
            parts.append("model " + ", ".join(model for _, model in key.models))
        elif len({k.endpoints for k in same_name}) > 1:
            parts.append(f"endpoints {key.endpoints[:8] or 'unknown'}")
        if len({k.timeout_multiplier for k in same_name}) > 1:
            parts.append(f"timeout ×{key.timeout_multiplier:g}" if key.timeout_multiplier else "")
        labels[key] = key.condition + (f" ({', '.join(p for p in parts if p)})" if parts else "")
    return labels


def _entry(label: str, key: ConditionKey, report: ReportDocument) -> Entry:
    totals = report.conditions[0].totals
    largest = largest_k(totals.pass_hat_ks)
    return Entry(
        label=label,
        condition=key.condition,
        manifest_sha256=key.manifest_sha256,
        endpoints_sha256=key.endpoints,
        models=dict(key.models),
        timeout_multiplier=key.timeout_multiplier,
        jobs=[job.name for job in report.jobs],
        n_tasks=totals.n_tasks,
        scored=totals.scored,
        task_mean=totals.task_mean,
        pass_rate=totals.pass_rate,
        pass_rate_interval=totals.pass_rate_interval,
        pass_hat_k=None if largest is None else PassHatK(k=largest[0], **largest[1].model_dump()),
        cost_usd=totals.cost_usd,
        tokens=totals.tokens,
        mean_trial_seconds=totals.mean_trial_seconds,
        floor=report.conditions[0].floor,
    )


def _rank_value(entry: Entry) -> float:
    return -1.0 if entry.task_mean is None else entry.task_mean.value


def build_leaderboard(paths: Sequence[Path], alpha: float) -> Leaderboard:
    """The leaderboard document of these runs or jobs (`DocumentError` when one is neither)."""
    groups: dict[ConditionKey, list[JobRecord]] = {}
    seen: set[Path] = set()
    for path in paths:
        for record in job_records(path):
            # A job named twice (alone and inside its run) counts once.
            if (where := Path(record.path).resolve()) not in seen:
                seen.add(where)
                groups.setdefault(condition_key(record), []).append(record)
    labels = _labels(list(groups))
    reports = {key: report_of_records(records) for key, records in groups.items()}
    entries = sorted(
        (_entry(labels[key], key, reports[key]) for key in groups),
        key=lambda entry: (-_rank_value(entry), entry.label),
    )
    sides = {
        labels[key]: side_of_report(report, labels[key], labels[key])
        for key, report in reports.items()
    }
    matrix = pairwise(sides, [entry.label for entry in entries], alpha)
    names = [key.condition for key in groups]
    split = sorted({name for name in names if names.count(name) > 1})
    return Leaderboard(alpha=alpha, entries=entries, matrix=matrix, shown_apart=split)
