"""The summary table, CSV and JSON output of §11.2."""

from __future__ import annotations

import csv
import io
import json

from rich.console import Console

from orchestra.config.errors import display_path
from orchestra.documents.summary import (
    ConditionSummary,
    GroupSummary,
    Rates,
    Summary,
    TaskPassAtK,
    UsageSummary,
)
from orchestra.report.summary_table import Column, Row, fit_table

ORACLE_NOTE = (
    "oracle condition: these scores replay the tasks' reference solutions through the agent "
    "stack; they measure the pipeline, not a model"
)


def _rate(value: float | None) -> str:
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


def task_pass_at_k_text(pass_at_k: TaskPassAtK | None) -> str:
    return "incomplete" if pass_at_k is None else f"{pass_at_k.value:.2f} (k={pass_at_k.k})"


def _counts(summary: Rates) -> dict[str, str]:
    return {
        "planned": str(summary.planned),
        "scored": str(summary.scored),
        "errors": str(summary.errors),
        "cancelled": str(summary.cancelled),
        "pass_rate": _rate(summary.pass_rate),
    }


def _usage(summary: UsageSummary) -> dict[str, str]:
    return {"tokens": _tokens(summary), "cost": _cost(summary), "time": _seconds(summary)}


#: The §11.2 columns after Layer and Task; ranks say which leave a narrow terminal first.
SUMMARY_COLUMNS = (
    Column("planned", "Trials", "right"),
    Column("scored", "Scored", "right", gap=1, drop_rank=4),
    Column("errors", "Errors", "right", short_header="Err", gap=1),
    Column("cancelled", "Cancelled", "right", short_header="Canc", gap=1, drop_rank=3),
    Column("pass_rate", "Pass rate", "right", short_header="Pass"),
    Column("pass_at_k", "pass@k", "left", drop_rank=5),
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
                "pass_at_k": task_pass_at_k_text(task.pass_at_k),
                "failing": failing_text(task.failing_dimensions),
                **_usage(task),
            }
            rows.append(Row(layer_name, task_name, cells))
        cells = {
            **_counts(layer),
            "pass_at_k": _group_pass_k(layer),
            "failing": "",
            **_usage(layer),
        }
        rows.append(Row(layer_name, f"(layer, {layer.n_tasks} tasks)", cells, bold=True))
    totals = condition.totals
    cells = {**_counts(totals), "pass_at_k": "—", "failing": "", **_usage(totals)}
    rows.append(Row("all", "(condition)", cells, bold=True))
    return rows


def render_summary(document: Summary, console: Console, width: int | None = None) -> None:
    """The §11.2 summary, fitted to `width` columns (None: the full table, for files and pipes)."""
    for condition in document.conditions:
        jobs = ", ".join(job.name for job in condition.jobs)
        console.print(
            f"Condition [bold]{condition.condition}[/bold]  "
            f"(manifest {condition.manifest_sha256[:8]}…)  jobs: {jobs}"
        )
        if condition.oracle:
            console.print(f"[yellow]{ORACLE_NOTE}[/yellow]")
        table = fit_table(SUMMARY_COLUMNS, summary_rows(condition), width)
        for line in table.lines:
            console.print(line, soft_wrap=True)
        if table.dropped:
            usage = _usage(condition.totals)
            totals = [f"{c.header.lower()} {usage[c.key]}" for c in table.dropped if c.key in usage]
            if totals:
                console.print(f"all tasks: {', '.join(totals)}")
            hidden = ", ".join(c.header for c in table.dropped)
            console.print(f"not shown at this width: {hidden} (--json has every column)")
        for kind, names in condition.error_types.items():
            console.print(f"{kind}: {len(names)} ({', '.join(names)})")
        for job in condition.jobs:
            console.print(f"job directory: {display_path(job.path)}")


def _group_pass_k(summary: GroupSummary) -> str:
    value = summary.pass_at_k
    return "—" if value is None else f"{value.value:.2f} ({value.n_tasks})"


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
