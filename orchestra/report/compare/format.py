"""`orchestra compare`'s text, markdown and JSON output of a comparison document."""

from __future__ import annotations

import json

from orchestra.plural import plural
from orchestra.report.compare.document import (
    EXCLUDED,
    IMPROVEMENT,
    MISSING,
    REGRESSION,
    UNCHANGED,
    UNSCORED,
    Comparison,
    DecisionRecord,
    MetricChange,
    SuiteRecord,
    TargetEffect,
    TaskComparison,
)
from orchestra.report.stats.power import ASSUMED, MAX_ATTEMPTS, Difficulty, attempts_needed

TEST_NAMES = {
    "permutation-exact": "exact one-sided permutation test of attempts within tasks",
    "permutation-monte-carlo": "one-sided permutation test of attempts within tasks "
    "(seeded Monte Carlo)",
    "none": "no test (no task scored on both sides with both passes and failures)",
}


def _counts(value: tuple[int, int] | None) -> str:
    return "—" if value is None else f"{value[0]}/{value[1]}"


def _points(value: float) -> str:
    return f"{value * 100:+.0f}"


def _changed_metrics(task: TaskComparison) -> list[MetricChange]:
    return [m for m in task.metrics if m.change != UNCHANGED]


def p_text(value: float) -> str:
    return f"{value:.3g}"


def headline(comparison: Comparison) -> str:
    statuses = [t.status for t in comparison.tasks]
    parts = [
        f"{plural(len(comparison.regressed_tasks), 'task')} regressed",
        f"{statuses.count(IMPROVEMENT)} improved",
        f"{statuses.count(UNCHANGED)} unchanged",
    ]
    parts += [
        f"{statuses.count(s)} {s}" for s in (UNSCORED, MISSING, EXCLUDED, "new") if s in statuses
    ]
    return ", ".join(parts)


def suite_text(comparison: Comparison) -> str:
    """`10 tasks paired: mean change −100 points [−100, −32] (95% clustered interval over tasks);
    exact one-sided permutation test of attempts within tasks (the one-sided exact McNemar
    test: 10 passed on the baseline only, 0 on the candidate only) p(regression)=0.000977
    p(improvement)=1`"""
    suite = comparison.suite
    text = f"{plural(suite.n_tasks, 'task')} paired"
    if suite.n_tasks:
        text += f": mean change {_points(suite.mean_difference)} points"
        if suite.interval is not None:
            low, high = suite.interval.low, suite.interval.high
            text += f" [{_points(low)}, {_points(high)}] (95% clustered interval over tasks)"
    text += f"; {TEST_NAMES[suite.test]}"
    if suite.discordant is not None and suite.test != "none":
        d = suite.discordant
        text += (
            f" (the one-sided exact McNemar test: {d.baseline_only} passed on the baseline "
            f"only, {d.candidate_only} on the candidate only)"
        )
    return (
        text + f" p(regression)={p_text(suite.p_regression)}"
        f" p(improvement)={p_text(suite.p_improvement)}"
    )


def verdict(comparison: Comparison) -> str:
    """Why the exit code is what it is, naming what makes it fail (confirmed tasks last)."""
    missing = comparison.missing_tasks
    alpha = comparison.alpha
    decision = comparison.decision
    failing = []
    if comparison.verdict == REGRESSION:
        failing.append(
            "a significant suite-level regression "
            f"(one-sided p={p_text(comparison.suite.p_regression)} "
            f"≤ α={alpha:g}{_family_note(decision)})"
        )
    if missing:
        failing.append(
            f"{plural(len(missing), 'task')} missing from the candidate: {', '.join(missing)}"
        )
    if comparison.fail_below_target and decision.missed_target:
        failing.append(
            f"below the reliability target {decision.target:.0%}: "
            + ", ".join(decision.missed_target)
        )
    if decision.confirmed_regressions:
        failing.append(
            f"confirmed regression ({_family_note(decision).removeprefix(', ')}): "
            + ", ".join(decision.confirmed_regressions)
        )
    if failing:
        return "exit 3: " + "; ".join(failing)
    if comparison.verdict == IMPROVEMENT:
        return (
            "exit 0: a significant suite-level improvement (one-sided "
            f"p={p_text(comparison.suite.p_improvement)} ≤ α={alpha:g}; reported, never "
            "a failure) and no baseline task missing from the candidate"
        )
    return (
        f"exit 0: no regression significant at α={alpha:g} "
        "and no baseline task missing from the candidate"
    )


def _family_note(decision: DecisionRecord) -> str:
    size = len(decision.family)
    return "" if size < 2 else f", Holm over a family of {size}"


def decision_lines(comparison: Comparison) -> list[str]:
    """A line per confirmed task of the decision's family: its fresh attempts, its test."""
    decision = comparison.decision
    below = {h.name: h for h in decision.below_target}
    lines = []
    for hypothesis in decision.family:
        if hypothesis.kind != "task":
            continue
        name = hypothesis.name
        evidence = decision.evidence[name]
        fresh, base = evidence.fresh, evidence.baseline
        why = "a first attempt failed" if evidence.screened else "under watch"
        outcome = "confirmed regression" if hypothesis.rejected else "not confirmed"
        line = (
            f"confirmation: {name} ({why}): {fresh.passes} of {fresh.scored} fresh "
            f"attempts against the baseline's {base.passes} of {base.scored}: one-sided "
            f"Boschloo p={p_text(hypothesis.p_value)}, Holm-adjusted "
            f"{p_text(hypothesis.adjusted)}: {outcome}"
        )
        if below[name].rejected:
            line += f"; below the reliability target {decision.target:.0%}"
        lines.append(line)
    return lines


def _sides_lines(comparison: Comparison) -> list[str]:
    lines = [
        f"{role}: {side.label} (condition {side.condition})"
        for role, side in (("baseline", comparison.baseline), ("candidate", comparison.candidate))
    ]
    lines += comparison.baseline.pooled
    if comparison.baseline.condition != comparison.candidate.condition:
        lines.append("note: the two sides ran different conditions")
    return lines


def lead_text(task: TaskComparison, n_paired: int) -> str:
    """The lead of a paired task (its difference and p-values are set)."""
    assert task.difference is not None and task.p_value is not None
    assert task.adjusted_p_value is not None
    return (
        f"lead: {_points(task.difference)} points, one-sided Fisher p={p_text(task.p_value)}"
        f" (Holm-adjusted over {plural(n_paired, 'task')}: {p_text(task.adjusted_p_value)})"
    )


def warning_lines(comparison: Comparison) -> list[str]:
    return [
        f"warning: {name}: the task's files changed between the two sides (compared anyway)"
        for name in comparison.changed_task_files
    ] + [
        f"warning: {name}: the two sides were graded by different verifiers "
        "(another tests/ digest; compared anyway)"
        for name in comparison.changed_verifiers
    ]


def effect_plan(suite: SuiteRecord, effect: float, alpha: float) -> TargetEffect:
    """`--target-effect`: the attempts per task (each side) the power simulation asks for,
    with the comparison's task difficulty (orchestra.report.stats.power)."""
    model = suite.power_model
    difficulty = ASSUMED if model is None else Difficulty(model.mean, model.sd, model.source)
    needed = attempts_needed(suite.n_tasks, effect, alpha, difficulty)
    plan = (
        f"to detect a fall of {effect * 100:g} points over {plural(suite.n_tasks, 'task')} at "
        f"one-sided α={alpha:g} with 80 % power ({difficulty.text()})"
    )
    text = (
        f"{plan}: not even {MAX_ATTEMPTS} attempts per task are enough: add tasks"
        if needed is None
        else f"{plan}: {plural(needed, 'attempt')} per task on each side"
    )
    return TargetEffect(effect=effect, attempts_per_task=needed, text=text)


def conclusion_lines(comparison: Comparison) -> list[str]:
    target = comparison.target_effect
    return [
        f"suite: {suite_text(comparison)}",
        *([f"power: {comparison.suite.power}"] if comparison.suite.power else []),
        *([f"target effect: {target.text}"] if target else []),
        f"result: {headline(comparison)}",
        *decision_lines(comparison),
        f"verdict: {comparison.verdict} (α={comparison.alpha:g})",
        verdict(comparison),
    ]


def format_text(comparison: Comparison) -> str:
    lines = _sides_lines(comparison)
    n_paired = comparison.suite.n_tasks
    for task in comparison.tasks:
        if task.status == UNCHANGED and not task.files_changed:
            continue
        lines.append(
            f"{task.status.upper():<12} {task.task} ({task.layer})"
            + (f": {task.note}" if task.note else "")
        )
        for metric in _changed_metrics(task):
            lines.append(
                f"    {metric.change:<14} {metric.metric}: "
                f"{_counts(metric.baseline)} → {_counts(metric.candidate)}"
                + (f"  ({metric.note})" if metric.note else "")
            )
        if task.status in (REGRESSION, IMPROVEMENT) and task.p_value is not None:
            lines.append("    " + lead_text(task, n_paired))
    lines += warning_lines(comparison)
    lines += conclusion_lines(comparison)
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def format_markdown(comparison: Comparison) -> str:
    lines = ["## Benchmark comparison", ""]
    lines += [f"- {_md(line)}" for line in _sides_lines(comparison) + warning_lines(comparison)]
    *details, last = conclusion_lines(comparison)
    lines += [f"- {_md(line)}" for line in details]
    lines += [f"- **{_md(last)}**", ""]
    lines += [
        "| Task | Layer | Status | Metric | Baseline | Candidate | p (Holm) | Note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task in comparison.tasks:
        p = (
            ""
            if task.p_value is None or task.adjusted_p_value is None or task.status == UNCHANGED
            else f"{p_text(task.p_value)} ({p_text(task.adjusted_p_value)})"
        )
        metrics = _changed_metrics(task)
        note = task.note + (" files changed" if task.files_changed else "")
        if not metrics:
            lines.append(
                f"| {_md(task.task)} | {task.layer} | {task.status} | | | | {p} | {_md(note)} |"
            )
        for metric in metrics:
            lines.append(
                f"| {_md(task.task)} | {task.layer} | {task.status} "
                f"| {_md(metric.metric)} | {_counts(metric.baseline)} "
                f"| {_counts(metric.candidate)} | {p if metric.metric == 'reward' else ''} "
                f"| {_md(metric.note or note)} |"
            )
    return "\n".join(lines) + "\n"


def format_json(comparison: Comparison) -> str:
    document = comparison.model_dump(mode="json")
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


FORMATTERS = {"text": format_text, "json": format_json, "markdown": format_markdown}
