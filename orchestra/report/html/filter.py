"""Filter, search and collapse for report.html, in one small inline script.

Every trial is a `<details class="trial">` (collapsed when the page holds many), so whatever a
trial's section contains (transcript, verdict, logs, any later section) folds with it. The
filter bar narrows both the trial index and the trial sections by task, outcome and failing
dimension, and a text search looks through each trial's whole text (its transcript included).
Without the script (scripts disabled) the bar stays hidden and every trial still expands by hand.

The Content-Security-Policy allows exactly this script by its hash: anything else in the page,
escaped or not, still cannot run.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from html import escape

from orchestra.documents.enums import TrialStatus
from orchestra.documents.report import PendingSlot, ReportTrial

#: Above this many trials the page starts with every trial collapsed.
OPEN_TRIALS_UP_TO = 12

SCRIPT = """
(() => {
  const bar = document.getElementById("filters");
  if (!bar) return;
  bar.hidden = false;
  const field = (id) => document.getElementById(id);
  const [task, outcome, failing, text, count] =
    ["f-task", "f-status", "f-failing", "f-text", "f-count"].map(field);
  const items = Array.from(document.querySelectorAll("[data-trial]"));
  const trials = items.filter((item) => item.matches("details.trial"));
  const byAttributes = (item) => (!task.value || item.dataset.task === task.value)
    && (!outcome.value || item.dataset.status === outcome.value)
    && (!failing.value || item.dataset.failing.split(" ").includes(failing.value));
  const apply = () => {
    const needle = text.value.trim().toLowerCase();
    const kept = new Map(trials.map((trial) => [trial.dataset.trial, byAttributes(trial)
      && (!needle || trial.textContent.toLowerCase().includes(needle))]));
    for (const item of items) {
      const key = item.dataset.trial;
      item.hidden = !(kept.has(key) ? kept.get(key) : byAttributes(item) && !needle);
    }
    const shown = trials.filter((trial) => !trial.hidden).length;
    count.textContent = `showing ${shown} of ${trials.length} trials`;
  };
  for (const control of [task, outcome, failing]) control.addEventListener("change", apply);
  text.addEventListener("input", apply);
  field("f-open").addEventListener("click", () => {
    for (const trial of trials) trial.open = !trial.hidden;
  });
  field("f-close").addEventListener("click", () => {
    for (const trial of trials) trial.open = false;
  });
  const reveal = () => {
    const id = decodeURIComponent(location.hash.slice(1));
    const target = id && document.getElementById(id);
    const trial = target && target.closest("details.trial");
    if (!trial) return;
    trial.hidden = false;
    trial.open = true;
    target.scrollIntoView();
  };
  window.addEventListener("hashchange", reveal);
  apply();
  reveal();
})();
"""
SCRIPT_SOURCE = f"'sha256-{base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()}'"


def outcome(trial: ReportTrial) -> str:
    """pass, fail, error, cancelled or running: what the filter and the index call a trial."""
    if trial.status is TrialStatus.SCORED:
        return "pass" if trial.succeeded else "fail"
    return trial.status.value


def failing_dimensions(trial: ReportTrial) -> list[str]:
    return [m for m in trial.failing_metrics if m != "reward"]


def trial_attributes(key: str, task: str, status: str, failing: Iterable[str]) -> str:
    """The `data-*` attributes the filter reads, on an index row or a trial section."""
    return (
        f'data-trial="{escape(key)}" data-task="{escape(task)}" data-status="{escape(status)}" '
        f'data-failing="{escape(" ".join(failing))}"'
    )


def _select(field_id: str, label: str, everything: str, values: Iterable[str]) -> str:
    options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
    return (
        f'<label>{label} <select id="{field_id}"><option value="">{everything}</option>'
        f"{options}</select></label>"
    )


def filter_bar(trials: list[ReportTrial], pending: list[PendingSlot]) -> str:
    """The controls, hidden until the script (`script_tag()`, at the end of the page) runs."""
    tasks = sorted({t.task_name for t in trials} | {slot.task_name for slot in pending})
    outcomes = sorted({outcome(t) for t in trials} | ({"not run"} if pending else set()))
    failing = sorted({name for t in trials for name in failing_dimensions(t)})
    return f"""
<section class="block filters" id="filters" hidden>
{_select("f-task", "Task", "every task", tasks)}
{_select("f-status", "Outcome", "every outcome", outcomes)}
{_select("f-failing", "Failing dimension", "any", failing)}
<label>Text <input id="f-text" type="search" placeholder="search transcripts"></label>
<button type="button" id="f-open">expand shown</button>
<button type="button" id="f-close">collapse all</button>
<output id="f-count"></output>
</section>"""


def script_tag() -> str:
    return f"<script>{SCRIPT}</script>"
