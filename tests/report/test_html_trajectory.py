"""Agents' trajectories in report.html: beside the transcript, collapsible, escaped, robust."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from browser import CHROMIUM, MISSING_REASON, dump_dom
from report_samples import HOSTILE
from test_html import parse

from orchestra.agents.trajectory.atif import Step, Trajectory, final_metrics
from orchestra.jsonio import write_json_atomic
from orchestra.paths import JobPaths
from orchestra.report.html.page import report_html, write_report_html
from orchestra.report.html.trajectory import SHOWN_CHARS
from orchestra.report.report_json import build_report

TS = "2026-11-29T17:42:03.123456Z"
BIG_OUTPUT = "line\n" * 4000  # 20,000 characters: more than a block shows


def sample_trajectory() -> Trajectory:
    steps = [
        Step(step_id=1, timestamp=TS, source="system", message="[Base]\nrules"),
        Step(
            step_id=2,
            timestamp=TS,
            source="user",
            message=f"[Context]\nScope: channel\n\n[Buzz event: mention]\nContent:\n{HOSTILE}",
        ),
        Step.model_validate(
            {
                "step_id": 3,
                "timestamp": TS,
                "source": "agent",
                "message": "Running it.",
                "reasoning_content": "<i>thinking</i>",
                "tool_calls": [
                    {
                        "tool_call_id": "c1",
                        "function_name": "buzz_dev_mcp__shell",
                        "arguments": {"command": "bash solve.sh"},
                    },
                    {
                        "tool_call_id": "c2",
                        "function_name": "buzz_dev_mcp__shell",
                        "arguments": {"command": "cat big.txt"},
                    },
                ],
                "observation": {
                    "results": [
                        {
                            "source_call_id": "c1",
                            "content": f"{HOSTILE}\nsolver exploded\n[exit code: 7]",
                        },
                        {"source_call_id": "c2", "content": BIG_OUTPUT},
                    ]
                },
                "metrics": {
                    "prompt_tokens": 1200,
                    "completion_tokens": 30,
                    "cached_tokens": 1000,
                    "cost_usd": 0.0012,
                },
            }
        ),
    ]
    return Trajectory(
        session_id="t:solo-1",
        agent={"name": "buzz-agent", "version": "0.1.0", "model_name": "gpt-x"},
        steps=steps,
        final_metrics=final_metrics(steps),
    )


@pytest.fixture
def job_with_trajectory(sample_job: Path) -> tuple[Path, Path]:
    """The sample job with a trajectory for solo-1 in its first trial: (job dir, the file)."""
    first = build_report([sample_job]).trials[0].trial_name
    path = JobPaths(sample_job).trial(first).trajectory("solo-1")
    write_json_atomic(path, sample_trajectory().to_document())
    return sample_job, path


def trial_article(html: str, index: int) -> str:
    """Trial `index`'s section (a `<details class="trial">`, up to the next trial or the end)."""
    start = html.index(f'<details class="trial" id="t{index}" ')
    following = html.find('<details class="trial" ', start + 1)
    return html[start : following if following >= 0 else html.index("</main>", start)]


def test_the_trajectory_sits_beside_the_transcript_with_collapsible_steps(
    job_with_trajectory: tuple[Path, Path],
) -> None:
    job, path = job_with_trajectory
    report = build_report([job])
    html = report_html(report, job)
    article = trial_article(html, 0)
    body = article[article.index('<div class="trial-body') :]
    sections = re.findall(r'<section class="(\w+)"', body)
    assert sections == ["transcript", "trajectories", "panel"]
    assert '<div class="trial-body with-trajectories">' in article
    assert article.count('<details class="step') == 3 and "<details open" not in article
    assert "4 steps" not in article and "3 steps" in article
    assert "tokens 1200 in (1000 cached) / 30 out · $0.0012" in article
    # summaries: the system prompt by size, the prompt by its event's content, the calls by
    # their commands and how they ended
    assert "system prompt (12 characters)" in article
    assert "buzz_dev_mcp__shell: bash solve.sh → [exit code: 7]" in article
    assert "&lt;script&gt;document.title=&quot;pwned&quot;" in article
    assert "<b>bold?</b>" not in html and "<i>thinking</i>" not in html
    assert "&lt;i&gt;thinking&lt;/i&gt;" in article
    assert "solver exploded\n[exit code: 7]</pre>" in article
    assert f"[… {len(BIG_OUTPUT) - SHOWN_CHARS} more characters in the trajectory file]" in article
    links = [a["href"] for tag, a in parse(article).tags if tag == "a" and "href" in a]
    to_file = [href for href in links if href.endswith("solo-1.trajectory.json")]
    assert to_file and all((job / unquote(href)).resolve() == path.resolve() for href in to_file)
    # a trial without a trajectory keeps the two-column layout
    assert '<section class="trajectories">' not in trial_article(html, 1)


def test_an_unreadable_trajectory_is_reported_in_the_page(
    job_with_trajectory: tuple[Path, Path],
) -> None:
    job, path = job_with_trajectory
    path.write_text('{"schema_version": "ATIF-v1.6", "steps": []}', encoding="utf-8")
    article = trial_article(report_html(build_report([job]), job), 0)
    assert "Unreadable trajectory: session_id: required key is missing" in article
    path.write_text("{not json", encoding="utf-8")
    article = trial_article(report_html(build_report([job]), job), 0)
    assert "Unreadable trajectory: (top level): invalid JSON: key must be a string" in article


@pytest.mark.skipif(CHROMIUM is None, reason=MISSING_REASON)
def test_chromium_renders_the_steps_closed_and_runs_nothing(
    job_with_trajectory: tuple[Path, Path], tmp_path: Path
) -> None:
    job, _ = job_with_trajectory
    page = job / "report.html"
    write_report_html(build_report([job]), page)
    dom = dump_dom(page.as_uri(), tmp_path / "profile")
    assert "pwned" not in re.sub(r"&lt;script&gt;.*?&lt;/script&gt;", "", dom)  # never ran
    assert dom.count('<details class="step') == 3
