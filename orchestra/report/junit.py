"""`junit.xml`: one testcase per trial, in the JUnit XML dialect CI servers read.

Mapping: a scored trial with reward 1 passes; a scored trial below 1 is a `failure` carrying
its failing metrics and the verifier's details; an `error` trial is an `error` carrying the
exception type, message and traceback (a harness fault, not a product failure); a cancelled
or still-running trial is `skipped`. One `testsuite` per job; `classname` is the task name so
consumers group attempts of one task together.
"""

from __future__ import annotations

import json
import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from orchestra.documents.enums import TrialStatus
from orchestra.documents.report import ReportDocument, ReportJob, ReportTrial
from orchestra.documents.summary import ConditionSummary, Interval
from orchestra.documents.trial import ExceptionInfo, TrialTokens
from orchestra.jsonio import write_text_atomic
from orchestra.report.text.summary import shown

# XML 1.0 cannot carry most C0 controls even escaped; verifier output and tracebacks may.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: object) -> str:
    return _XML_INVALID.sub("\ufffd", "" if text is None else str(text))


def _seconds(trial: ReportTrial) -> str:
    value = trial.durations.total_seconds
    return f"{max(0.0, value or 0.0):.3f}"


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _failure_text(trial: ReportTrial) -> str:
    rewards = trial.rewards or {}
    lines = [f"reward: {shown(trial.reward)}", "metrics:"]
    lines += [
        f"  {name}: {value}{'  <- failed' if name in trial.failing_metrics else ''}"
        for name, value in sorted(rewards.items())
    ]
    lines += [
        f"stop reason: {shown(trial.stop_reason)}",
        "verifier details:",
        _pretty(trial.details),
    ]
    return "\n".join(lines)


def _token_line(tokens: TrialTokens | None) -> str:
    if tokens is None:
        return "-"
    return f"input={tokens.input} cached_input={tokens.cached_input} output={tokens.output}"


def _error_text(trial: ReportTrial, info: ExceptionInfo | None) -> str:
    """What went wrong in the words of whoever failed: a provider's or a verifier's error is
    its message (their status and output); only a bug (`InternalError`) shows the traceback."""
    message = info.exception_message if info else ""
    if trial.error_cause == "internal":
        return (info.exception_traceback if info else "") or message
    if trial.error_cause == "provider":
        message += "\n(the model provider failed: a harness error, not the agent's score)"
    return message


def _summary_text(trial: ReportTrial) -> str:
    """Every metric and the facts a CI reader needs, whatever the outcome (the schema has no
    per-testcase properties)."""
    metrics = ", ".join(f"{k}={v}" for k, v in sorted((trial.rewards or {}).items()))
    return "\n".join(
        (
            f"trial: {trial.trial_name} (layer {trial.layer}, attempt {trial.attempt})",
            f"status: {trial.status}; stop reason: {shown(trial.stop_reason)}",
            f"reward: {shown(trial.reward)}; metrics: {metrics or '-'}",
            f"cost: {shown(trial.cost_usd)}; tokens: {_token_line(trial.tokens)}",
            f"trial directory: {trial.files.dir}",
        )
    )


def _testcase_element(suite: ET.Element, classname: str, name: str, seconds: str) -> ET.Element:
    return ET.SubElement(
        suite, "testcase", {"classname": _clean(classname), "name": _clean(name), "time": seconds}
    )


def _testcase(suite: ET.Element, trial: ReportTrial) -> str:
    """Append the trial's testcase; return its outcome (passed/failure/error/skipped)."""
    case = _testcase_element(
        suite,
        trial.task_name,
        f"{trial.short_name} attempt {trial.attempt} ({trial.trial_name})",
        _seconds(trial),
    )
    status = trial.status
    if status is TrialStatus.SCORED and trial.succeeded:
        outcome = "passed"
    elif status is TrialStatus.SCORED:
        outcome = "failure"
        failing = [m for m in trial.failing_metrics if m != "reward"] or ["reward"]
        element = ET.SubElement(
            case,
            "failure",
            {"message": _clean(f"failing metrics: {', '.join(failing)}"), "type": "RewardBelowOne"},
        )
        element.text = _clean(_failure_text(trial))
    elif status is TrialStatus.ERROR:
        outcome = "error"
        info = trial.exception_info
        kind = str(info.exception_type) if info else "UnknownError"
        message = info.exception_message if info else ""
        element = ET.SubElement(
            case, "error", {"message": _clean(f"{kind}: {message}"), "type": kind}
        )
        element.text = _clean(_error_text(trial, info))
    else:
        outcome = "skipped"
        ET.SubElement(case, "skipped", {"message": _clean(f"trial {status}")})
    ET.SubElement(case, "system-out").text = _clean(_summary_text(trial))
    return outcome


def _count_attributes(counts: dict[str, float]) -> dict[str, str]:
    """The tests/failures/errors/skipped/time attributes of a testsuite or testsuites."""
    return {key: f"{value:.3f}" if key == "time" else str(value) for key, value in counts.items()}


def _rate_properties(
    name: str, value: float | None, interval: Interval | None
) -> list[tuple[str, object]]:
    if value is None:
        return []
    found: list[tuple[str, object]] = [(name, f"{value:.6g}")]
    if interval is not None:
        found += [(f"{name}_low", f"{interval.low:.6g}"), (f"{name}_high", f"{interval.high:.6g}")]
    return found


def condition_properties(condition: ConditionSummary) -> list[tuple[str, object]]:
    """The condition's pass rates with their 95 % intervals (docs/statistics.md), prefixed
    `condition.`: a job's suite carries those of the condition it counts toward."""
    totals = condition.totals
    found = _rate_properties("pass_rate", totals.pass_rate, totals.pass_rate_interval)
    found += _rate_properties("pass_rate_all", totals.pass_rate_all, totals.pass_rate_all_interval)
    if totals.task_mean is not None:
        found += _rate_properties("task_mean", totals.task_mean.value, totals.task_mean.interval)
    for label, estimates in (("pass_at_", totals.pass_at_ks), ("pass_hat_", totals.pass_hat_ks)):
        for k, estimate in estimates.items():
            found += _rate_properties(f"{label}{k}", estimate.value, estimate.interval)
    if totals.flaky_tasks:
        found.append(("flaky_tasks", ",".join(totals.flaky_tasks)))
    return [(f"condition.{name}", value) for name, value in found]


def _condition_of(report: ReportDocument, job: ReportJob) -> ConditionSummary | None:
    """The condition the job counts toward (same name, manifest and models sent)."""
    return next(
        (
            condition
            for condition in report.conditions
            if (condition.condition, condition.manifest_sha256, condition.models)
            == (job.condition, job.manifest_sha256, job.models)
        ),
        None,
    )


def junit_xml(report: ReportDocument) -> str:
    root = ET.Element("testsuites", {"name": "buzz-orchestra"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    hostname = socket.gethostname()
    for job in report.jobs:
        trials: Sequence[ReportTrial] = [t for t in report.trials if t.job_name == job.name]
        suite = ET.SubElement(root, "testsuite", {"name": _clean(job.name)})
        suite_properties = ET.SubElement(suite, "properties")
        condition = _condition_of(report, job)
        for name, value in (
            ("condition", job.condition),
            ("manifest_sha256", job.manifest_sha256),
            ("attempts", job.attempts),
            ("oracle", str(job.oracle).lower()),
            *(condition_properties(condition) if condition else []),
        ):
            ET.SubElement(suite_properties, "property", {"name": name, "value": _clean(value)})
        outcomes = [_testcase(suite, trial) for trial in trials]
        for slot in job.pending:
            # A planned trial that never started still shows up, so CI sees the full plan.
            case = _testcase_element(
                suite,
                slot.task_name,
                f"{slot.task_name.rpartition('/')[2]} attempt {slot.attempt} (not run)",
                "0.000",
            )
            ET.SubElement(
                case, "skipped", {"message": "not run: the job stopped before this trial started"}
            )
            outcomes.append("skipped")
        counts = {
            "tests": len(outcomes),
            "failures": outcomes.count("failure"),
            "errors": outcomes.count("error"),
            "skipped": outcomes.count("skipped"),
            "time": sum(float(_seconds(t)) for t in trials),
        }
        for key, value in counts.items():
            totals[key] += value
        started = min((t.started_at for t in trials), default=None)
        suite.attrib.update(
            {
                **_count_attributes(counts),
                "hostname": hostname,
                **({"timestamp": started[:19]} if started else {}),
            }
        )
    root.attrib.update(_count_attributes(totals))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit_xml(report: ReportDocument, path: Path) -> None:
    write_text_atomic(path, junit_xml(report))
