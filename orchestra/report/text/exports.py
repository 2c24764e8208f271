"""The §11.2 summary as JSON (`summarize --json`) and CSV (`summarize --csv`), intervals filled
in."""

from __future__ import annotations

import csv
import io
import json

from orchestra.documents.summary import Summary
from orchestra.report.stats.estimates import with_intervals
from orchestra.report.text.summary import failing_text


def summary_json(document: Summary) -> str:
    return (
        json.dumps(
            with_intervals(document).model_dump(mode="json"),
            sort_keys=True,
            indent=2,
            ensure_ascii=False,
        )
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
    # added at the end: columns are read by position too
    "successes",
    "pass_rate_low",
    "pass_rate_high",
    "pass_hat_k",
    "flaky",
    "cache_write_input_tokens",
    "floor",
)


def summary_csv(document: Summary) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for condition in with_intervals(document).conditions:
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
                        task.successes,
                        *(
                            (interval.low, interval.high)
                            if (interval := task.pass_rate_interval)
                            else (None, None)
                        ),
                        task.pass_hat_ks.get(pass_k.k) if pass_k else None,
                        task.flaky,
                        task.tokens.cache_write_input,
                        task.floor,
                    ]
                )
    return buffer.getvalue()
