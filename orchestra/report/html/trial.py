"""One trial's section of report.html: transcript beside the verifier's verdict and the logs."""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from urllib.parse import quote

from pydantic import JsonValue

from orchestra.documents.enums import TrialStatus
from orchestra.documents.report import ReportTrial
from orchestra.documents.trial import VerifierInputs
from orchestra.jobs.tally import metric_passed
from orchestra.jsonio import read_json_object
from orchestra.report.html.agents import agents_table
from orchestra.report.html.filter import failing_dimensions, outcome, trial_attributes
from orchestra.report.html.trajectory import has_trajectories, render_trajectories
from orchestra.report.html.transcript import message_anchor, render_transcript
from orchestra.report.text.summary import shown


def trial_anchor(index: int) -> str:
    return f"t{index}"


def href(target: str, out_dir: Path) -> str:
    """A link from the report's directory to a trial file (relative, so the folder can move)."""
    return quote(Path(os.path.relpath(target, out_dir)).as_posix())


def status_cell(trial: ReportTrial) -> str:
    shown = escape(outcome(trial))
    css = shown if trial.status is TrialStatus.SCORED else f"status-{shown}"
    return f'<span class="{css}">{shown}</span>'


def _links(trial: ReportTrial, out_dir: Path) -> str:
    files = trial.files
    labelled = (
        (files.trial_log, "trial.log"),
        (files.result_json, "result.json"),
        (files.config_json, "config.json"),
        (files.evidence_json, "evidence"),
        (files.transcript_json, "transcript.json"),
        (files.evidence_error, "evidence export error"),
        (files.reward_json, "reward.json"),
        (files.details_json, "details.json"),
        (files.verifier_stdout, "verifier output"),
        (files.oracle_log, "oracle log"),
    )
    links = [f'<a href="{href(path, out_dir)}">{label}</a>' for path, label in labelled if path]
    rows = [f'<div class="links">{"".join(links) or "<span class=empty>no files</span>"}</div>']
    for agent_id, logs in files.agents.items():
        agent_links = "".join(
            f'<a href="{href(path, out_dir)}">{label}</a>'
            for path, label in (
                (logs.system_prompt, "system prompt"),
                (logs.stdout, "stdout"),
                (logs.stderr, "stderr"),
                (logs.events, "events"),
                (logs.trajectory, "trajectory"),
            )
            if path
        )
        rows.append(
            f'<div class="links"><b>{escape(agent_id)}:</b> '
            f"{agent_links or '<span class=empty>no logs</span>'}</div>"
        )
    return "\n".join(rows)


def _metrics_table(trial: ReportTrial) -> str:
    rewards = trial.rewards
    if not rewards:
        return '<p class="empty">No metrics (the trial was not scored).</p>'
    scored = trial.status is TrialStatus.SCORED

    def cell(value: float) -> str:
        # an unscored trial's metrics are kept for inspection only: no pass/fail marks on them
        graded = f" {'pass' if metric_passed(value) else 'fail'}" if scored else ""
        return f'<td class="num{graded}">{escape(str(value))}</td>'

    rows = [
        f"<tr><td>{escape(name)}</td>{cell(value)}</tr>"
        for name, value in sorted(rewards.items(), key=lambda item: (item[0] != "reward", item[0]))
    ]
    note = "" if scored else '<p class="empty">Not a score: kept for inspection.</p>'
    return f'{note}<table class="metrics"><tr><th>metric</th><th class="num">value</th></tr>{"".join(rows)}</table>'


def _details_table(
    details: dict[str, JsonValue] | None, prefix: str, index_of: dict[str, int]
) -> str:
    if details is None:
        return '<p class="empty">No details.json.</p>'
    rows = []
    for key, value in sorted(details.items()):
        text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        rendered = f"<pre>{escape(text)}</pre>"
        if isinstance(value, str) and value in index_of:
            # A message id the verifier points at: jump to it in the transcript.
            rendered += f'<a href="#{message_anchor(prefix, index_of[value])}">→ message #{index_of[value] + 1}</a>'
        rows.append(f"<tr><td><code>{escape(key)}</code></td><td>{rendered}</td></tr>")
    return f'<table class="details">{"".join(rows)}</table>'


def _inputs_table(inputs: VerifierInputs | None) -> str:
    """What the verifier judged (§10.3 `verifier_inputs`): each file's path, origin and SHA-256."""
    if inputs is None:
        return '<p class="empty">The verifier did not run.</p>'
    rows = [
        f"<tr><td><code>{escape(file.path)}</code></td><td>{escape(file.source)}"
        f'</td><td class="num">{file.size}</td>'
        f"<td><code>{escape(file.sha256)}</code></td></tr>"
        for file in inputs.files
    ]
    return (
        f'<p class="digest">evidence read: <code>{escape(inputs.evidence_sha256 or "none")}</code></p>'
        '<table class="inputs"><tr><th>file</th><th>from</th><th class="num">bytes</th>'
        f"<th>SHA-256</th></tr>{''.join(rows)}</table>"
    )


def _facts(trial: ReportTrial) -> str:
    tokens = trial.tokens
    durations = trial.durations
    cost = trial.cost_usd
    phases = ", ".join(
        f"{phase} {seconds:.1f}s"
        for phase, seconds in durations.phase_seconds.items()
        if seconds is not None
    )
    facts = (
        ("status", status_cell(trial)),
        ("stop reason", escape(shown(trial.stop_reason))),
        ("reward", escape(shown(trial.reward))),
        (
            "tokens in / cached / out",
            "— / — / —"
            if tokens is None
            else f"{tokens.input} / {tokens.cached_input} / {tokens.output}",
        ),
        ("cost", "—" if cost is None else escape(f"${cost:.4f}")),
        ("accounting", escape(trial.accounting.value)),
        (
            "duration",
            "—" if durations.total_seconds is None else f"{durations.total_seconds:.1f}s",
        ),
        ("phases", escape(phases or "—")),
        ("agent active", escape(str(durations.agent_active_seconds))),
    )
    return (
        '<table class="facts">'
        + "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
        + "</table>"
    )


CAUSE_NOTES = {
    "provider": "The model provider failed: a harness error, not a score (excluded from "
    "pass rates; its rewards are kept for inspection).",
    "verifier": "The task's verifier failed; its exit code and output are below.",
    "harness": "The benchmark harness failed: not a score.",
    "internal": "An orchestrator bug: the traceback is below.",
}


def _error(trial: ReportTrial) -> str:
    info = trial.exception_info
    if info is None:
        return ""
    cause = trial.error_cause
    traceback = f"<pre>{escape(info.exception_traceback)}</pre>" if cause == "internal" else ""
    return (
        f'<div class="error"><h3 class="status-error">{escape(info.exception_type.value)}'
        f" in phase {escape(info.phase.value)}</h3>"
        f"<p>{escape(CAUSE_NOTES.get(str(cause), ''))}</p>"
        f"<pre>{escape(info.exception_message)}</pre>{traceback}</div>"
    )


def render_trial(trial: ReportTrial, index: int, out_dir: Path, *, expanded: bool = True) -> str:
    """The trial's section: a `<details>` whose summary line is the header, so every part of
    the section (any added later too) collapses with it."""
    prefix = trial_anchor(index)
    evidence_path = trial.files.evidence_json
    evidence = read_json_object(Path(evidence_path)) if evidence_path else None
    messages = (evidence or {}).get("messages")
    index_of = {
        str(m.get("id")): i
        for i, m in enumerate(messages if isinstance(messages, list) else [])
        if isinstance(m, dict) and m.get("id")
    }
    if evidence is None:
        transcript = (
            '<p class="empty">No evidence file: the transcript was not exported'
            + (" (see the evidence export error link)." if trial.files.evidence_error else ".")
            + "</p>"
        )
    else:
        transcript = render_transcript(evidence, trial.details, prefix)
    trajectories = (
        '\n<section class="trajectories"><h3>Agent trajectories</h3>'
        f"{render_trajectories(trial, lambda path: href(path, out_dir))}</section>"
        if has_trajectories(trial)
        else ""
    )
    attributes = trial_attributes(
        prefix, trial.task_name, outcome(trial), failing_dimensions(trial)
    )
    return f"""
<details class="trial" id="{prefix}" {attributes}{" open" if expanded else ""}>
<summary><h2>{escape(trial.task_name)} · attempt {trial.attempt}</h2>
<span>{status_cell(trial)}</span><code>{escape(trial.trial_name)}</code>
<span>job {escape(trial.job_name)}</span></summary>
<div class="trial-body{" with-trajectories" if trajectories else ""}">
<section class="transcript"><h3>Channel transcript</h3>{transcript}</section>{trajectories}
<section class="panel">
<h3>Verifier metrics</h3>{_metrics_table(trial)}
<h3>Verifier details</h3>{_details_table(trial.details, prefix, index_of)}
<h3>Outcome</h3>{_facts(trial)}{_error(trial)}
<h3>Agents</h3>{agents_table(trial.agents)}
<h3>Verifier inputs</h3>{_inputs_table(trial.verifier_inputs)}
<h3>Logs and files</h3>{_links(trial, out_dir)}
</section>
</div>
</details>"""
