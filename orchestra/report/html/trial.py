"""One trial's section of report.html: transcript beside the verifier's verdict and the logs."""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

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


def status_cell(trial: dict[str, Any]) -> str:
    shown = escape(outcome(trial))
    css = shown if trial["status"] == "scored" else f"status-{shown}"
    return f'<span class="{css}">{shown}</span>'


def _links(trial: dict[str, Any], out_dir: Path) -> str:
    files = trial["files"]
    labels = (
        ("trial_log", "trial.log"),
        ("result_json", "result.json"),
        ("config_json", "config.json"),
        ("evidence_json", "evidence"),
        ("transcript_json", "transcript.json"),
        ("evidence_error", "evidence export error"),
        ("reward_json", "reward.json"),
        ("details_json", "details.json"),
        ("verifier_stdout", "verifier output"),
        ("oracle_log", "oracle log"),
    )
    links = [
        f'<a href="{href(files[key], out_dir)}">{label}</a>'
        for key, label in labels
        if files.get(key)
    ]
    rows = [f'<div class="links">{"".join(links) or "<span class=empty>no files</span>"}</div>']
    for agent_id, logs in files["agents"].items():
        agent_links = "".join(
            f'<a href="{href(path, out_dir)}">{escape(kind.replace("_", " "))}</a>'
            for kind, path in logs.items()
        )
        rows.append(
            f'<div class="links"><b>{escape(agent_id)}:</b> '
            f"{agent_links or '<span class=empty>no logs</span>'}</div>"
        )
    return "\n".join(rows)


def _metrics_table(trial: dict[str, Any]) -> str:
    rewards = trial["rewards"]
    if not rewards:
        return '<p class="empty">No metrics (the trial was not scored).</p>'
    scored = trial["status"] == "scored"

    def cell(value: Any) -> str:
        # an unscored trial's metrics are kept for inspection only: no pass/fail marks on them
        graded = f" {'pass' if metric_passed(value) else 'fail'}" if scored else ""
        return f'<td class="num{graded}">{escape(str(value))}</td>'

    rows = [
        f"<tr><td>{escape(name)}</td>{cell(value)}</tr>"
        for name, value in sorted(rewards.items(), key=lambda item: (item[0] != "reward", item[0]))
    ]
    note = "" if scored else '<p class="empty">Not a score: kept for inspection.</p>'
    return f'{note}<table class="metrics"><tr><th>metric</th><th class="num">value</th></tr>{"".join(rows)}</table>'


def _details_table(details: dict[str, Any] | None, prefix: str, index_of: dict[str, int]) -> str:
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


def _inputs_table(inputs: dict[str, Any] | None) -> str:
    """What the verifier judged (§10.3 `verifier_inputs`): each file's path, origin and SHA-256."""
    if inputs is None:
        return '<p class="empty">The verifier did not run.</p>'
    evidence = inputs["evidence_sha256"]
    rows = [
        f"<tr><td><code>{escape(str(file['path']))}</code></td><td>{escape(str(file['source']))}"
        f'</td><td class="num">{escape(str(file["size"]))}</td>'
        f"<td><code>{escape(str(file['sha256']))}</code></td></tr>"
        for file in inputs["files"]
    ]
    return (
        f'<p class="digest">evidence read: <code>{escape(str(evidence or "none"))}</code></p>'
        '<table class="inputs"><tr><th>file</th><th>from</th><th class="num">bytes</th>'
        f"<th>SHA-256</th></tr>{''.join(rows)}</table>"
    )


def _facts(trial: dict[str, Any]) -> str:
    tokens = trial["tokens"] if isinstance(trial["tokens"], dict) else {}
    durations = trial["durations"]
    cost = trial["cost_usd"]
    phases = ", ".join(
        f"{phase} {seconds:.1f}s"
        for phase, seconds in durations["phase_seconds"].items()
        if isinstance(seconds, int | float)
    )
    facts = (
        ("status", status_cell(trial)),
        ("stop reason", escape(shown(trial["stop_reason"]))),
        ("reward", escape(shown(trial["reward"]))),
        (
            "tokens in / cached / out",
            escape(
                f"{tokens.get('input', '—')} / {tokens.get('cached_input', '—')} / {tokens.get('output', '—')}"
            ),
        ),
        ("cost", escape(f"${cost:.4f}" if isinstance(cost, int | float) else "—")),
        ("accounting", escape(str(trial["accounting"]))),
        (
            "duration",
            escape(
                "—" if durations["total_seconds"] is None else f"{durations['total_seconds']:.1f}s"
            ),
        ),
        ("phases", escape(phases or "—")),
        ("agent active", escape(str(durations["agent_active_seconds"]))),
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


def _error(trial: dict[str, Any]) -> str:
    info = trial["exception_info"]
    if not isinstance(info, dict):
        return ""
    cause = trial.get("error_cause")
    traceback = (
        f"<pre>{escape(str(info.get('exception_traceback') or ''))}</pre>"
        if cause == "internal"
        else ""
    )
    return (
        f'<div class="error"><h3 class="status-error">{escape(str(info.get("exception_type")))}'
        f" in phase {escape(str(info.get('phase')))}</h3>"
        f"<p>{escape(CAUSE_NOTES.get(str(cause), ''))}</p>"
        f"<pre>{escape(str(info.get('exception_message') or ''))}</pre>{traceback}</div>"
    )


def render_trial(trial: dict[str, Any], index: int, out_dir: Path, *, expanded: bool = True) -> str:
    """The trial's section: a `<details>` whose summary line is the header, so every part of
    the section (any added later too) collapses with it."""
    prefix = trial_anchor(index)
    evidence_path = trial["files"].get("evidence_json")
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
            + (
                " (see the evidence export error link)."
                if trial["files"].get("evidence_error")
                else "."
            )
            + "</p>"
        )
    else:
        transcript = render_transcript(evidence, trial["details"], prefix)
    trajectories = (
        '\n<section class="trajectories"><h3>Agent trajectories</h3>'
        f"{render_trajectories(trial, lambda path: href(path, out_dir))}</section>"
        if has_trajectories(trial)
        else ""
    )
    attributes = trial_attributes(
        prefix, str(trial["task_name"]), outcome(trial), failing_dimensions(trial)
    )
    return f"""
<details class="trial" id="{prefix}" {attributes}{" open" if expanded else ""}>
<summary><h2>{escape(str(trial["task_name"]))} · attempt {escape(str(trial["attempt"]))}</h2>
<span>{status_cell(trial)}</span><code>{escape(str(trial["trial_name"]))}</code>
<span>job {escape(str(trial["job_name"]))}</span></summary>
<div class="trial-body{" with-trajectories" if trajectories else ""}">
<section class="transcript"><h3>Channel transcript</h3>{transcript}</section>{trajectories}
<section class="panel">
<h3>Verifier metrics</h3>{_metrics_table(trial)}
<h3>Verifier details</h3>{_details_table(trial["details"], prefix, index_of)}
<h3>Outcome</h3>{_facts(trial)}{_error(trial)}
<h3>Agents</h3>{agents_table(trial["agents"])}
<h3>Verifier inputs</h3>{_inputs_table(trial["verifier_inputs"])}
<h3>Logs and files</h3>{_links(trial, out_dir)}
</section>
</div>
</details>"""
