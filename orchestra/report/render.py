"""The summary table, CSV and JSON output of §11.2."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable

from rich.console import Console, JustifyMethod
from rich.table import Table

from orchestra.documents.enums import ErrorType
from orchestra.documents.summary import (
    LayerSummary,
    Rates,
    Summary,
    TaskPassAtK,
    UsageSummary,
)
from orchestra.plural import plural

#: The table's natural width: a summary is read, not glanced at, so it is never squeezed
#: below this (a narrower terminal wraps the lines instead).
SUMMARY_WIDTH = 220
ORACLE_NOTE = (
    "oracle condition: these scores replay the tasks' reference solutions through the agent "
    "stack; they measure the pipeline, not a model"
)


def rate_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _kilo(value: int) -> str:
    return f"{value / 1000:.1f}k"


def _tokens(summary: UsageSummary) -> str:
    return f"{_kilo(summary.tokens.input)}/{_kilo(summary.tokens.output)}"


def _cost(summary: UsageSummary) -> str:
    return f"${summary.cost_usd:.4f}"


def _seconds(summary: UsageSummary) -> str:
    value = summary.mean_trial_seconds
    return "—" if value is None else f"{value:.1f}s"


def failing_text(dimensions: dict[str, int]) -> str:
    return ", ".join(f"{name}×{count}" for name, count in dimensions.items()) or "-"


def pass_at_k_text(value: float, ks: Iterable[int], n_tasks: int | None = None) -> str:
    """One notation for every row: `0.67 (k=3)` for a task, `0.92 (k=3, 4 tasks)` for a layer
    (the mean over the `n_tasks` tasks that have one)."""
    k = "k=" + "/".join(str(k) for k in sorted(set(ks)))
    return f"{value:.2f} ({k}{'' if n_tasks is None else ', ' + plural(n_tasks, 'task')})"


def task_pass_at_k_text(pass_at_k: TaskPassAtK | None) -> str:
    return "incomplete" if pass_at_k is None else pass_at_k_text(pass_at_k.value, [pass_at_k.k])


def layer_pass_at_k_text(layer: LayerSummary) -> str:
    value = layer.pass_at_k
    if value is None:
        return "—"
    ks = [task.pass_at_k.k for task in layer.tasks.values() if task.pass_at_k]
    return pass_at_k_text(value.value, ks, value.n_tasks)


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


def _counts(summary: Rates) -> list[str]:
    return [
        str(summary.planned),
        str(summary.scored),
        str(summary.errors),
        str(summary.cancelled),
        str(summary.not_started),
        rate_text(summary.pass_rate),
        rate_text(summary.pass_rate_all),
    ]


_SUMMARY_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("Layer", "left"),
    ("Task", "left"),
    ("Trials", "right"),
    ("Scored", "right"),
    ("Errors", "right"),
    ("Cancelled", "right"),
    ("Not started", "right"),
    ("Pass rate", "right"),
    ("Pass rate (all)", "right"),
    ("pass@k", "left"),
    ("Failing dimensions", "left"),
    ("Tokens in/out", "left"),
    ("Cost", "right"),
    ("Mean time", "right"),
)


def render_summary(document: Summary, console: Console) -> None:
    for condition in document.conditions:
        jobs = ", ".join(job.name for job in condition.jobs)
        console.print(
            f"Condition [bold]{condition.condition}[/bold]  "
            f"(manifest {condition.manifest_sha256[:8]}…)  jobs: {jobs}"
        )
        if condition.oracle:
            console.print(f"[yellow]{ORACLE_NOTE}[/yellow]")
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for column, justify in _SUMMARY_COLUMNS:
            table.add_column(column, justify=justify)
        for layer_name, layer in condition.layers.items():
            for task_name, task in layer.tasks.items():
                table.add_row(
                    layer_name,
                    task_name,
                    *_counts(task),
                    task_pass_at_k_text(task.pass_at_k),
                    failing_text(task.failing_dimensions),
                    _tokens(task),
                    _cost(task),
                    _seconds(task),
                )
            table.add_row(
                layer_name,
                f"(layer, {plural(layer.n_tasks, 'task')})",
                *_counts(layer),
                layer_pass_at_k_text(layer),
                "",
                _tokens(layer),
                _cost(layer),
                _seconds(layer),
                style="bold",
            )
        totals = condition.totals
        table.add_row(
            "all",
            "(condition)",
            *_counts(totals),
            "—",
            "",
            _tokens(totals),
            _cost(totals),
            _seconds(totals),
            style="bold",
        )
        console.print(table)
        console.print(f"trials: {summary_counts_text(totals)}", highlight=False)
        for kind, names in condition.error_types.items():
            note = PROVIDER_NOTE if kind in PROVIDER_ERROR_TYPES else ""
            console.print(f"{kind}: {len(names)} ({', '.join(names)}){note}")
        for job in condition.jobs:
            started = "" if job.started else " (not started)"
            console.print(f"job directory: {job.path}{started}", highlight=False)
            if job.stopped is not None:
                spent = f" (${job.spent_usd:.4f} spent)" if job.spent_usd is not None else ""
                console.print(
                    f"stopped: {job.stopped}{spent}: {job.stop_message}",
                    markup=False,
                    highlight=False,
                )


PROVIDER_ERROR_TYPES = frozenset(t.value for t in ErrorType if t.cause == "provider")
PROVIDER_NOTE = " — the model provider failed: errors, not scores of 0"


def summary_json(document: Summary) -> str:
    return (
        json.dumps(document.model_dump(mode="json"), sort_keys=True, indent=2, ensure_ascii=False)
        + "\n"
    )


CSV_FIELDS = (
    "condition",
    "manifest_sha256",
    "layer",
    "task",
    "planned",
    "scored",
    "errors",
    "cancelled",
    "running",
    "not_started",
    "pass_rate",
    "pass_rate_all",
    "pass_at_k",
    "k",
    "incomplete",
    "failing_dimensions",
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "cost_usd",
    "mean_trial_seconds",
)


def summary_csv(document: Summary) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for condition in document.conditions:
        for layer_name, layer in condition.layers.items():
            for task_name, task in layer.tasks.items():
                pass_k = task.pass_at_k
                writer.writerow(
                    [
                        condition.condition,
                        condition.manifest_sha256,
                        layer_name,
                        task_name,
                        task.planned,
                        task.scored,
                        task.errors,
                        task.cancelled,
                        task.running,
                        task.not_started,
                        task.pass_rate,
                        task.pass_rate_all,
                        pass_k.value if pass_k else None,
                        pass_k.k if pass_k else None,
                        task.incomplete,
                        failing_text(task.failing_dimensions),
                        task.tokens.input,
                        task.tokens.cached_input,
                        task.tokens.output,
                        task.cost_usd,
                        task.mean_trial_seconds,
                    ]
                )
    return buffer.getvalue()
