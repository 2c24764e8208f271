"""report.html: self-contained, escaped, and rendered by a real browser (headless Chromium)."""

import base64
import hashlib
import json
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from browser import CHROMIUM, MISSING_REASON, colour_counts, dump_dom, screenshot
from jobs_builder import SAMPLE_VERIFIER_INPUTS, USER, Msg, TrialSpec, build_job
from report_samples import HOSTILE

from orchestra.documents.report import ReportDocument
from orchestra.report.html.filter import SCRIPT
from orchestra.report.html.page import report_html, write_report_html
from orchestra.report.html.transcript import identities_of, render_content
from orchestra.report.report_json import build_report

TEXT_ONLY_MENTION_RGB = (0xFF, 0xEB, 0xE9)  # background of a mention without a p tag
GRADED_OUTLINE_RGB = (0x2D, 0xA4, 0x4E)


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text inside each `a.mention`."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.mentions: list[tuple[dict[str, str], str]] = []
        self._in_mention: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if tag == "a" and "mention" in attributes.get("class", ""):
            self._in_mention = attributes

    def handle_data(self, data: str) -> None:
        if self._in_mention is not None:
            self.mentions.append((self._in_mention, data))
            self._in_mention = None


def parse(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


def trial_index(report: ReportDocument, task: str, attempt: int) -> int:
    return next(
        i for i, t in enumerate(report.trials) if t.short_name == task and t.attempt == attempt
    )


def test_page_is_self_contained_and_escapes_messages(sample_job: Path) -> None:
    report = build_report([sample_job])
    html = report_html(report, sample_job)
    elements = parse(html)
    assert not [tag for tag, _ in elements.tags if tag in ("link", "img", "iframe")]
    # One script, the page's own filter, and the policy lets only it run (by its hash).
    assert html.count("<script>") == 1 and f"<script>{SCRIPT}</script>" in html
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html
    assert not re.search(r"https?://", html)  # nothing to fetch: works offline
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert "&lt;script&gt;document.title=&quot;pwned&quot;" in html
    assert "<b>bold?</b>" not in html


def test_each_scored_trial_shows_the_hashes_of_what_its_verifier_judged(
    sample_job: Path,
) -> None:
    report = build_report([sample_job])
    html = report_html(report, sample_job)
    scored = [trial for trial in report.trials if trial.verifier_inputs is not None]
    assert scored and len(scored) < len(report.trials)
    assert html.count("<h3>Verifier inputs</h3>") == len(report.trials)
    assert html.count("The verifier did not run.") == len(report.trials) - len(scored)
    assert html.count(f"evidence read: <code>{'e' * 64}</code>") == len(scored)
    for file in SAMPLE_VERIFIER_INPUTS["files"]:
        row = (
            f"<tr><td><code>{escape(file['path'])}</code></td><td>{file['source']}</td>"
            f'<td class="num">{file["size"]}</td><td><code>{file["sha256"]}</code></td></tr>'
        )
        assert html.count(row) == len(scored), row


def test_links_are_relative_and_point_at_the_trial_files(sample_job: Path) -> None:
    report = build_report([sample_job])
    write_report_html(report, sample_job / "report.html")
    elements = parse((sample_job / "report.html").read_text(encoding="utf-8"))
    hrefs = [a["href"] for tag, a in elements.tags if tag == "a" and not a["href"].startswith("#")]
    assert hrefs, "no file links"
    for href in hrefs:
        assert not href.startswith("/")
        assert (sample_job / unquote(href)).is_file(), href
    assert any(h.endswith("solo-1.stderr.log") for h in hrefs)
    assert any(h.endswith("trial.log") for h in hrefs)
    anchors = {a["id"] for _, a in elements.tags if "id" in a}
    internal = [
        a["href"][1:] for tag, a in elements.tags if tag == "a" and a["href"].startswith("#")
    ]
    assert internal and set(internal) <= anchors  # every in-page link has a target


def test_transcript_marks_threads_mentions_scripted_and_graded(sample_job: Path) -> None:
    report = build_report([sample_job])
    elements = parse(report_html(report, sample_job))
    failed = f"t{trial_index(report, 'user-mention', 2)}"
    mentions = [(a, text) for a, text in elements.mentions if a["href"].startswith(f"#{failed}-")]
    # The failing answer names the user in text only: highlighted as such, linked to the user.
    assert (f"@{USER}") in [text for a, text in mentions if "text-only" in a["class"]]
    user_anchor = next(a["href"][1:] for a, text in mentions if text == f"@{USER}")
    identity = next(a for _, a in elements.tags if a.get("id") == user_anchor)
    assert identity is not None
    messages = {
        a["id"]: a
        for tag, a in elements.tags
        if tag == "div" and "msg" in a.get("class", "").split()
    }
    assert (
        "graded" in messages[f"{failed}-m1"]["class"]
        and "depth-1" in messages[f"{failed}-m1"]["class"]
    )
    workflow = f"t{trial_index(report, 'interleaved-agent-reports', 1)}"
    classes = {
        key[len(workflow) + 1 :]: a["class"]
        for key, a in messages.items()
        if key.startswith(f"{workflow}-")
    }
    assert "scripted" in classes["m1"] and "depth-1" in classes["m1"]
    assert "depth-2" in classes["m2"]  # a reply to the scripted bot reply: nested one level more
    assert "depth-0" in classes["m3"] and "scripted" in classes["m3"]
    notified = [
        text
        for a, text in elements.mentions
        if a["href"].startswith(f"#{workflow}-") and "notified" in a["class"]
    ]
    assert "@Build Bot" in notified and "@Deploy Bot" in notified


def chosen_trial() -> TrialSpec:
    """A failing user-mention trial: the answer names the user without a p tag, and a
    hostile message sits in the thread."""
    return TrialSpec(
        "user-mention",
        rewards={"reward": 0.0, "answer_correct": 1.0, "user_p_tagged": 0.0},
        messages=[
            Msg(
                USER,
                "@solo-1 We pay $37 per month for each of our 12 software licenses. "
                "What is our total annual cost?",
                mentions=("solo-1",),
            ),
            Msg(USER, HOSTILE, reply_to=0),
            Msg("solo-1", f"@{USER} The total annual cost is $5,328.", reply_to=0),
        ],
    )


@pytest.mark.skipif(CHROMIUM is None, reason=MISSING_REASON)
def test_chromium_renders_the_chosen_trial_and_never_runs_a_message(tmp_path: Path) -> None:
    job = build_job(tmp_path / "jobs", "chosen-job", [chosen_trial()])
    report = build_report([job])
    page = job / "report.html"
    write_report_html(report, page)
    dom = dump_dom(page.as_uri(), tmp_path / "profile-dom")
    assert "pwned" not in re.sub(r"&lt;script&gt;.*?&lt;/script&gt;", "", dom)  # never ran
    assert "<title>Buzz Orchestra report: chosen-job</title>" in dom
    assert "&lt;script&gt;document.title=" in dom  # shown as text
    assert 'class="mention text-only" href="#t0-id-0"' in dom
    assert 'id="t0-id-0"' in dom
    shot = screenshot(page.as_uri(), tmp_path / "profile-shot", tmp_path / "report.png", 1200, 1300)
    colours = colour_counts(shot)
    assert len(colours) > 50  # a rendered page, not a blank one
    # The chosen trial's transcript is on screen: its text-only mention and graded outline.
    assert colours[TEXT_ONLY_MENTION_RGB] > 200
    assert colours[GRADED_OUTLINE_RGB] > 200


def test_a_mention_of_a_shared_display_name_links_the_identity_it_notifies() -> None:
    evidence = {
        "identities": {"solo-1": {"role": "orchestrator", "pubkey": "a" * 64}},
        "directory": [
            {"identity_id": "taylor-1", "name": "Taylor Lee", "role": "user", "pubkey": "b" * 64},
            {"identity_id": "taylor-2", "name": "Taylor Lee", "role": "user", "pubkey": "c" * 64},
        ],
    }
    identities = identities_of(evidence, "t9")
    pattern = re.compile("@(Taylor Lee|solo-1)")
    html = render_content("@Taylor Lee approved", identities, ["c" * 64], pattern)
    assert html == (
        '<a class="mention notified" href="#t9-id-2" title="p-tagged: notified">@Taylor Lee</a>'
        " approved"
    )
    unnotified = render_content("@Taylor Lee <hi>", identities, [], pattern)
    assert 'class="mention text-only" href="#t9-id-1"' in unnotified
    assert unnotified.endswith(" &lt;hi&gt;")


def test_junk_evidence_renders_without_crashing(sample_job: Path) -> None:
    report = build_report([sample_job])
    trial = report.trials[0]
    junk = {
        "identities": {"x": "not a dict", "<i>": {"role": 5, "pubkey": None}},
        "directory": "nope",
        "scripted_events": "abc",
        "messages": [
            "text",
            {"id": 7, "kind": "9", "created_at": 10**20, "content": ["list"], "tags": "x",
             "mentioned_pubkeys": "p", "reply_to_event_id": 7, "pubkey": {"a": 1}},
            {"id": "loop-a", "reply_to_event_id": "loop-b", "content": "<a>"},
            {"id": "loop-b", "reply_to_event_id": "loop-a", "content": "b"},
        ],
        "truncated": True,
    }  # fmt: skip
    assert trial.files.evidence_json is not None
    Path(trial.files.evidence_json).write_text(json.dumps(junk), encoding="utf-8")
    html = report_html(report, sample_job)
    assert "Truncated evidence" in html and "&lt;a&gt;" in html
    assert "&lt;i&gt;" in html and "<i>" not in html
    loop = re.findall(r'data-event-id="(loop-[ab])"', html)
    assert sorted(loop) == ["loop-a", "loop-b"]  # a reply loop is shown, not dropped


def test_a_deep_reply_chain_renders(sample_job: Path) -> None:
    report = build_report([sample_job])
    trial = report.trials[0]
    messages = [{"id": "m0", "content": "root"}] + [
        {"id": f"m{i}", "content": str(i), "reply_to_event_id": f"m{i - 1}"} for i in range(1, 3000)
    ]
    assert trial.files.evidence_json is not None
    Path(trial.files.evidence_json).write_text(json.dumps({"messages": messages}))
    html = report_html(report, sample_job)
    assert html.count('class="msg depth-4') == 2996  # indentation is capped


def test_an_error_says_whose_failure_it_is_and_only_a_bug_shows_its_traceback(
    tmp_path: Path,
) -> None:
    """A provider error is marked as not a score, a verifier error shows the
    verifier's own output, and only `InternalError` shows the orchestrator's traceback."""
    job = build_job(
        tmp_path,
        "errors",
        [
            TrialSpec("user-mention", status="error", exception_type="ProviderUnavailable"),
            TrialSpec("reply-to-thread", status="error", exception_type="RewardFileNotFound"),
            TrialSpec("dm-reply", status="error", exception_type="InternalError"),
        ],
    )
    report = build_report([job])
    verifier = report.trials[trial_index(report, "reply-to-thread", 1)].exception_info
    assert verifier is not None
    verifier.exception_message = (
        "no reward.json; the verifier exited 7; the end of verifier/test-stdout.txt:\n"
        "  solver exploded"
    )
    html = report_html(report, job)
    errors = {}
    for task in ("user-mention", "reply-to-thread", "dm-reply"):
        article = html[html.index(f"<h2>buzz-native/{task} · attempt 1</h2>") :]
        article = article[article.index('<div class="error">') :]
        errors[task] = article[: article.index("</div>")]
    assert "The model provider failed: a harness error, not a score" in errors["user-mention"]
    assert "the verifier exited 7" in errors["reply-to-thread"]
    assert "  solver exploded</pre>" in errors["reply-to-thread"]
    assert "The task&#x27;s verifier failed" in errors["reply-to-thread"]
    assert [task for task, e in errors.items() if "Traceback" in e] == ["dm-reply"]


def test_an_unscored_trial_shows_its_metrics_without_pass_or_fail_marks(tmp_path: Path) -> None:
    """A trial whose provider failed is an error, not a score: the metrics its verifier
    wrote stay for inspection, but without the grader's pass/fail marks a scored trial gets."""
    metrics = {"reward": 0.0, "reply_to_thread": 1.0}
    job = build_job(
        tmp_path,
        "unscored",
        [
            TrialSpec("user-mention", rewards=metrics),
            TrialSpec("reply-to-thread", status="error", exception_type="ProviderUnavailable"),
        ],
    )
    report = build_report([job])
    # a provider failure voids the reward but keeps the verifier's metrics (§9.4)
    report.trials[trial_index(report, "reply-to-thread", 1)].rewards = metrics
    html = report_html(report, job)
    tables = {}
    for task in ("user-mention", "reply-to-thread"):
        article = html[html.index(f"<h2>buzz-native/{task} · attempt 1</h2>") :]
        article = article[article.index("<h3>Verifier metrics</h3>") :]
        tables[task] = article[: article.index("</table>")]
    assert 'class="num pass"' in tables["user-mention"]
    assert 'class="num fail"' in tables["user-mention"]
    assert "pass" not in tables["reply-to-thread"].replace("</table>", "")
    assert 'class="num fail"' not in tables["reply-to-thread"]
    assert "Not a score: kept for inspection." in tables["reply-to-thread"]


def test_confirmation_attempts_are_listed_apart_on_the_page(tmp_path: Path) -> None:
    """Attempts beyond k (confirmation reruns) stay out of the table's rates and are
    shown as confirmation attempts under the condition's table."""
    passed, failed = {"reward": 1.0}, {"reward": 0.0}
    job = build_job(
        tmp_path,
        "confirming",
        [
            TrialSpec("user-mention", rewards=passed),
            TrialSpec("reply-to-thread", rewards=failed),
            TrialSpec("reply-to-thread", attempt=2, rewards=failed),
            TrialSpec("reply-to-thread", attempt=3, rewards=passed),
        ],
    )
    html = report_html(build_report([job]), job)
    assert (
        "confirmation attempts: buzz-native/reply-to-thread passed 1 of 2 scored "
        "(2 attempts beyond k, not in the pass rates)"
    ) in html
    assert "confirmation attempts: buzz-native/user-mention" not in html
