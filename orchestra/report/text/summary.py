"""The summary table of §11.2 and the figures' texts every output shares (its CSV and JSON:
`orchestra.report.text.exports`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from rich.console import Console
from rich.markup import escape

from orchestra.config.errors import display_path
from orchestra.documents.enums import ErrorType
from orchestra.documents.summary import (
    ConditionSummary,
    Estimate,
    GroupSummary,
    Interval,
    LayerSummary,
    Rates,
    Summary,
    TaskPassAtK,
    TaskSummary,
    Uncertainty,
    UsageSummary,
)
from orchestra.documents.trial import TokenCounts
from orchestra.plural import plural
from orchestra.report.stats.clustered import CALIBRATED_ATTEMPTS, CALIBRATED_TASKS
from orchestra.report.stats.estimates import with_intervals
from orchestra.report.text.floor import floor_cell, floor_lines, layer_floor_text, with_floor_column
from orchestra.report.text.liveness import flags_text, liveness_lines, seat_activity_text
from orchestra.report.text.table import Column, Row, fit_table

_Figure = TypeVar("_Figure")

ORACLE_NOTE = (
    "oracle condition: these scores replay the tasks' reference solutions through the agent "
    "stack; they measure the pipeline, not a model"
)


def shown(value: object) -> str:
    """A value for a reader: `—` for a missing one (null in the documents), never `None`."""
    return "—" if value is None else str(value)


def rate_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def interval_text(interval: Interval | None) -> str:
    return "—" if interval is None else f"[{interval.low:.2f}, {interval.high:.2f}]"


def value_interval_text(estimate: Estimate) -> str:
    """`0.60 [0.31, 0.83]`, `0.60 —` when a single task gives no interval."""
    return f"{estimate.value:.2f} {interval_text(estimate.interval)}"


def estimate_text(estimate: Estimate | None) -> str:
    """`0.60 [0.31, 0.83]`; "—" when nothing was estimated (fewer attempts than k)."""
    if estimate is None:
        return "—"
    if estimate.interval is None:
        return f"{estimate.value:.2f}"
    return f"{estimate.value:.2f} {interval_text(estimate.interval)}"


def largest_k(values: dict[int, _Figure]) -> tuple[int, _Figure] | None:
    """The figure at the largest k (None: no k reached), the one a summary row shows."""
    if not values:
        return None
    k = max(values)
    return k, values[k]


def task_pass_hat_k_text(task: TaskSummary) -> str:
    """pass^k at the task's largest k: `0.20 (k=3)`; "—" with fewer scored trials than k."""
    k, value = largest_k(task.pass_hat_ks) or (0, None)
    return "—" if value is None else pass_at_k_text(value, [k])


def _largest_k_text(estimates: dict[int, Estimate]) -> str:
    largest = largest_k(estimates)
    if largest is None:
        return "—"
    k, estimate = largest
    return f"{estimate_text(estimate)} (k={k}, {plural(estimate.n_tasks, 'task')})"


def group_pass_hat_k_text(group: GroupSummary) -> str:
    return _largest_k_text(group.pass_hat_ks)


def condition_pass_at_k_text(totals: GroupSummary) -> str:
    """The condition's pass@k at one k over the tasks that reach it: the layers' own pass@k
    may use different k, whose plain mean would mean nothing."""
    return _largest_k_text(totals.pass_at_ks)


def _kilo(value: int) -> str:
    return f"{value / 1000:.1f}k"


def tokens_text(tokens: TokenCounts) -> str:
    """`12.3k/0.4k`: input and output tokens."""
    return f"{_kilo(tokens.input)}/{_kilo(tokens.output)}"


def _cost(summary: UsageSummary) -> str:
    return f"${summary.cost_usd:.4f}"


def _seconds(summary: UsageSummary) -> str:
    value = summary.mean_trial_seconds
    return "—" if value is None else f"{value:.1f}s"


def failing_text(dimensions: dict[str, int]) -> str:
    return ", ".join(f"{name}×{count}" for name, count in dimensions.items()) or "-"


def pass_at_k_text(
    value: float, ks: Iterable[int], n_tasks: int | None = None, left_out: int = 0
) -> str:
    """One notation for every row: `0.67 (k=3)` for a task, `0.92 (k=3, 4 tasks)` for a layer
    (the mean over the `n_tasks` tasks that have one; `left_out` tasks scored fewer than k)."""
    k = "k=" + "/".join(str(k) for k in sorted(set(ks)))
    tasks = "" if n_tasks is None else ", " + plural(n_tasks, "task")
    missing = f"; {left_out} with < k scored left out" if left_out else ""
    return f"{value:.2f} ({k}{tasks}{missing})"


def task_pass_at_k_text(pass_at_k: TaskPassAtK | None) -> str:
    return "incomplete" if pass_at_k is None else pass_at_k_text(pass_at_k.value, [pass_at_k.k])


def layer_pass_at_k_text(layer: LayerSummary) -> str:
    value = layer.pass_at_k
    if value is None:
        return "—"
    ks = [task.pass_at_k.k for task in layer.tasks.values() if task.pass_at_k]
    return pass_at_k_text(value.value, ks, value.n_tasks, len(value.left_out))


def counts_text(planned: int, scored: int, errors: int, cancelled: int, running: int) -> str:
    """Trial counts that add up to `planned`: `4/6 done (3 scored, 1 error), 1 cancelled,
    0 running, 1 not started`; done = scored + errors (the trials that ran to the end)."""
    not_started = max(0, planned - scored - errors - cancelled - running)
    return (
        f"{scored + errors}/{planned} done ({scored} scored, {plural(errors, 'error')}), "
        f"{cancelled} cancelled, {running} running, {not_started} not started"
    )


def summary_counts_text(summary: Rates) -> str:
    return counts_text(
        summary.planned, summary.scored, summary.errors, summary.cancelled, summary.running
    )


def _counts(summary: Rates) -> dict[str, str]:
    return {
        "planned": str(summary.planned),
        "scored": str(summary.scored),
        "errors": str(summary.errors),
        "cancelled": str(summary.cancelled),
        "not_started": str(summary.not_started),
        "pass_rate": rate_text(summary.pass_rate),
        "pass_rate_all": rate_text(summary.pass_rate_all),
    }


def _intervals(summary: TaskSummary | GroupSummary) -> dict[str, str]:
    return {"interval": interval_text(summary.pass_rate_interval)}


def _usage(summary: UsageSummary) -> dict[str, str]:
    return {
        "tokens": tokens_text(summary.tokens),
        "cost": _cost(summary),
        "time": _seconds(summary),
    }


#: The §11.2 columns after Layer and Task; ranks say which leave a narrow terminal first (the
#: trial counts below the table keep what Scored, Cancelled and Not started said).
SUMMARY_COLUMNS = (
    Column("planned", "Trials", "right"),
    Column("scored", "Scored", "right", gap=1, drop_rank=4),
    Column("errors", "Errors", "right", short_header="Err", gap=1),
    Column("cancelled", "Cancelled", "right", short_header="Canc", gap=1, drop_rank=3),
    Column("not_started", "Not started", "right", short_header="NS", gap=1, drop_rank=3),
    Column("pass_rate", "Pass rate", "right", short_header="Pass"),
    Column("interval", "95% interval", "left", short_header="95%", drop_rank=4),
    Column("pass_rate_all", "Pass rate (all)", "right", short_header="All"),
    Column("pass_at_k", "pass@k", "left", drop_rank=5),
    Column("pass_hat_k", "pass^k", "left", drop_rank=5),
    Column("failing", "Failing dimensions", "left", detail=True),
    Column("tokens", "Tokens in/out", "left", drop_rank=2),
    Column("cost", "Cost", "right", drop_rank=2),
    Column("time", "Mean time", "right", drop_rank=1),
)


def summary_rows(condition: ConditionSummary) -> list[Row]:
    rows = []
    for layer_name, layer in condition.layers.items():
        for task_name, task in layer.tasks.items():
            cells = {
                **_counts(task),
                **_intervals(task),
                "pass_at_k": task_pass_at_k_text(task.pass_at_k),
                "pass_hat_k": task_pass_hat_k_text(task),
                "failing": failing_text(task.failing_dimensions),
                "floor": floor_cell(task.floor),
                **_usage(task),
            }
            rows.append(Row(layer_name, task_name, cells))
        cells = {
            **_counts(layer),
            **_intervals(layer),
            "pass_at_k": layer_pass_at_k_text(layer),
            "pass_hat_k": group_pass_hat_k_text(layer),
            "failing": "",
            "floor": layer_floor_text(layer),
            **_usage(layer),
        }
        rows.append(Row(layer_name, f"(layer, {plural(layer.n_tasks, 'task')})", cells, bold=True))
    totals = condition.totals
    cells = {
        **_counts(totals),
        **_intervals(totals),
        "pass_at_k": condition_pass_at_k_text(totals),
        "pass_hat_k": group_pass_hat_k_text(totals),
        "failing": "",
        "floor": rate_text(condition.floor.value) if condition.floor else "—",
        **_usage(totals),
    }
    rows.append(Row("all", "(condition)", cells, bold=True))
    return rows


def served_models_text(models: dict[str, str]) -> str:
    """The endpoints that send a model id other than their name (orchestrator.md §11), or ""."""
    named = [f"{name}={model}" for name, model in models.items() if model != name]
    return f"  models: {', '.join(named)}" if named else ""


def render_summary(
    document: Summary, console: Console, width: int | None = None, *, every_column: str = "--json"
) -> None:
    """The §11.2 summary, fitted to `width` columns (None: the full table, for files and pipes),
    with its intervals (docs/statistics.md); `every_column` is what shows the columns a narrow
    table leaves out, as the command that printed it can say it (`summarize`'s own `--json`; a
    whole command after a run)."""
    for condition in with_intervals(document).conditions:
        jobs = ", ".join(job.name for job in condition.jobs)
        console.print(
            f"Condition [bold]{condition.condition}[/bold]  "
            f"(manifest {condition.manifest_sha256[:8]}…)  jobs: {jobs}"
            f"{escape(served_models_text(condition.models))}"
        )
        if condition.oracle:
            console.print(f"[yellow]{ORACLE_NOTE}[/yellow]")
        table = fit_table(
            with_floor_column(SUMMARY_COLUMNS, condition), summary_rows(condition), width
        )
        for line in table.lines:
            console.print(line, soft_wrap=True)
        if table.dropped:
            usage = _usage(condition.totals)
            totals = [f"{c.header.lower()} {usage[c.key]}" for c in table.dropped if c.key in usage]
            if totals:
                console.print(f"all tasks: {', '.join(totals)}", highlight=False)
            hidden = ", ".join(c.header for c in table.dropped)
            console.print(
                f"not shown at this width: {hidden} ({every_column} has every column)",
                highlight=False,
            )
        console.print(f"trials: {summary_counts_text(condition.totals)}", highlight=False)
        for estimate_line in [*estimate_lines(condition.totals), *floor_lines(condition)]:
            console.print(estimate_line, markup=False, highlight=False)
        for confirmation_line in confirmation_lines(condition):
            console.print(confirmation_line, markup=False, highlight=False)
        for liveness_line in liveness_lines(condition):
            console.print(liveness_line, markup=False, highlight=False)
        for agent_line in agent_lines(condition):
            console.print(agent_line, markup=False, highlight=False)
        for kind, names in condition.error_types.items():
            note = PROVIDER_NOTE if kind in PROVIDER_ERROR_TYPES else ""
            console.print(f"{kind}: {len(names)} ({', '.join(names)}){note}")
        for job in condition.jobs:
            started = "" if job.started else " (not started)"
            console.print(f"job directory: {display_path(job.path)}{started}", highlight=False)
            if job.stopped is not None:
                spent = f" (${job.spent_usd:.4f} spent)" if job.spent_usd is not None else ""
                console.print(
                    f"stopped: {job.stopped}{spent}: {job.stop_message}",
                    markup=False,
                    highlight=False,
                )


def uncertainty_text(uncertainty: Uncertainty, n_tasks: int) -> str:
    """`uncertainty ±19 points: 56% between tasks, 44% within tasks; design effect 1.9 ...`"""
    share = uncertainty.between_share
    if uncertainty.half_width == 0 or (share is None and uncertainty.design_effect == 1):
        split = "no spread to split (every attempt alike, or one attempt per task)"
    elif share is None:
        split = "between and within tasks not separable (one attempt per task)"
    else:
        split = f"{share:.0%} between tasks, {1 - share:.0%} within tasks"
    text = (
        f"uncertainty ±{uncertainty.half_width * 100:.0f} points: {split}; design effect "
        f"{uncertainty.design_effect:.1f} (effective n {uncertainty.effective_n:.1f} of "
        f"{plural(uncertainty.attempts, 'attempt')}); with twice the attempts "
        f"±{uncertainty.twice_attempts * 100:.0f}, twice the tasks "
        f"±{uncertainty.twice_tasks * 100:.0f}"
    )
    if not uncertainty.calibrated:
        per_task = uncertainty.attempts / n_tasks
        text += (
            f"\nwarning: {plural(n_tasks, 'task')} × {per_task:.3g} attempts is outside the "
            f"calibrated designs ({CALIBRATED_TASKS[0]}–{CALIBRATED_TASKS[1]} tasks × "
            f"{CALIBRATED_ATTEMPTS[0]}–{CALIBRATED_ATTEMPTS[1]} attempts, coverage ≥ 90 % "
            'measured): the interval may cover less (docs/statistics.md, "Intervals")'
        )
    return text


def estimate_lines(totals: GroupSummary) -> list[str]:
    """Below the table: the mean over tasks with its interval, and the flaky tasks."""
    lines = []
    if totals.task_mean is not None:
        lines.append(
            f"mean over {plural(totals.task_mean.n_tasks, 'task')}: "
            f"{estimate_text(totals.task_mean)} (95% interval over tasks)"
        )
        if totals.task_mean.uncertainty is not None:
            lines.append(uncertainty_text(totals.task_mean.uncertainty, totals.task_mean.n_tasks))
    if totals.flaky_tasks:
        lines.append(f"flaky (passed some attempts, not all): {', '.join(totals.flaky_tasks)}")
    return lines


def confirmation_lines(condition: ConditionSummary) -> list[str]:
    """Attempts beyond k (confirmation reruns), which the rows and rates leave out."""
    return [
        confirmation_text(task_name, c.attempts, c.scored, c.passes)
        for layer in condition.layers.values()
        for task_name, task in layer.tasks.items()
        if (c := task.confirmation) is not None
    ]


def confirmation_text(task_name: str, attempts: int, scored: int, passes: int) -> str:
    """One task's confirmation attempts, as the summary and report.html say it."""
    return (
        f"confirmation attempts: {task_name} passed {passes} of {scored} scored "
        f"({plural(attempts, 'attempt')} beyond k, not in the pass rates)"
    )


def share_text(share: float | None) -> str:
    return "—" if share is None else f"{share:.0%}"


def agent_lines(condition: ConditionSummary) -> list[str]:
    """A team's agents, one line each: role, endpoint, transcript messages and their share of
    what the agents wrote, tokens and cost, model requests, seconds with a turn in flight and
    the trials each flag marked the seat in (nothing for a solo roster)."""
    if len(condition.agents) < 2:
        return []
    cells = [
        (
            agent_id,
            agent.role,
            agent.endpoint,
            f"{agent.messages} msgs ({share_text(agent.transcript_share)})",
            f"{_kilo(agent.tokens.input)}/{_kilo(agent.tokens.output)}",
            f"${agent.cost_usd:.4f}",
            seat_activity_text(agent),
            flags_text(agent.flags),
        )
        for agent_id, agent in condition.agents.items()
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return ["agents (transcript share, tokens in/out, cost, requests and time, flags):"] + [
        "  "
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]


PROVIDER_ERROR_TYPES = frozenset(t.value for t in ErrorType if t.cause == "provider")
PROVIDER_NOTE = " — the model provider failed: errors, not scores of 0"
