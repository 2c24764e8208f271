"""Reports on real oracle jobs: the reference solution (baseline) and a negative solution that
forgets the p tag (candidate), each run through the real relay, agent tree and verifier."""

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from browser import CHROMIUM, MISSING_REASON, colour_counts, dump_dom, screenshot
from xsd_check import Schema

from orchestra.paths import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASK = PROJECT_ROOT / "tasks" / "buzz-native" / "user-mention"
NEGATIVE = PROJECT_ROOT / "tests" / "fixtures" / "negative-solutions" / "user-mention.sh"
SCHEMA = Schema(Path(__file__).with_name("junit.xsd"))
NOTIFIED_MENTION_RGB = (0xDD, 0xF4, 0xFF)
GRADED_OUTLINE_RGB = (0x2D, 0xA4, 0x4E)


def orchestra(*args: str) -> list[str]:
    """The installed console script, as `just benchmark` runs it."""
    return [str(Path(sys.executable).with_name("orchestra")), *args]


def run_benchmark(task: Path, job: str, relay_url: str, database_url: str, tmp: Path) -> Path:
    """The run directory (it holds the one job, of the same name)."""
    args = [
        "benchmark", "--stack", "external", "--env", "local", "--relay-url", relay_url,
        "--database-url",
        database_url, "--path", str(task), "--jobs-dir", str(tmp / "jobs"), "--state-dir",
        str(tmp / "state"), "-n", "1", "--job-name", job, "-q",
    ]  # fmt: skip
    run = subprocess.run(orchestra(*args), capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    return tmp / "jobs" / job


@pytest.fixture(scope="module")
def real_jobs(
    relay_url: str, embedded_pg, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("real-jobs")
    broken = tmp / "tasks" / "user-mention"
    shutil.copytree(TASK, broken)
    shutil.copyfile(NEGATIVE, broken / "solution" / "solve.sh")
    database_url = embedded_pg.new_database_url()
    baseline = run_benchmark(TASK, "oracle-baseline", relay_url, database_url, tmp)
    candidate = run_benchmark(broken, "oracle-candidate", relay_url, database_url, tmp)
    return baseline, candidate


def test_reports_of_a_real_run_match_its_trial_results(real_jobs: tuple[Path, Path]) -> None:
    _, candidate = real_jobs
    run = subprocess.run(
        orchestra("report", str(candidate)), capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    (trial_dir,) = [p for p in (candidate / candidate.name).iterdir() if p.is_dir()]
    result = json.loads((trial_dir / "result.json").read_text())
    assert result["status"] == "scored" and result["rewards"]["user_p_tagged"] == 0.0
    report = json.loads((candidate / "report.json").read_text())
    (trial,) = report["trials"]
    for key in ("reward", "rewards", "status", "stop_reason", "tokens", "cost_usd"):
        assert trial[key] == result[key], key
    assert trial["details"] == json.loads((trial_dir / "verifier" / "details.json").read_text())
    task = report["conditions"][0]["layers"]["regression"]["tasks"]["buzz-native/user-mention"]
    assert task["pass_rate"] == 0.0 and task["failing_dimensions"] == {"user_p_tagged": 1}
    assert task["metrics"]["answer_correct"] == {"passed": 1, "scored": 1, "rate": 1.0}
    junit = ET.parse(candidate / "junit.xml").getroot()
    assert SCHEMA.validate(junit) == []
    (case,) = junit.iter("testcase")
    assert case.find("failure").get("message") == "failing metrics: user_p_tagged"
    html = (candidate / "report.html").read_text(encoding="utf-8")
    assert "graded: selected_message_id" in html
    # The negative solution names the user in plain text: the graded answer notifies nobody.
    graded = html.split('class="msg depth-1 role-orchestrator graded"')[1].split("</div></div>")[0]
    assert "John Vincent Doe, the total annual cost is $5,328" in graded
    assert "notifies" not in graded


def test_compare_reports_exactly_the_broken_task(real_jobs: tuple[Path, Path]) -> None:
    baseline, candidate = real_jobs
    run = subprocess.run(
        orchestra("compare", str(baseline), str(candidate), "--format", "json"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # One attempt on each side: the drop is reported, but 1/1 → 0/1 is p = 0.5, no failure.
    assert run.returncode == 0, run.stderr
    comparison = json.loads(run.stdout)
    assert comparison["regressed_tasks"] == ["buzz-native/user-mention"]
    assert comparison["significant_regressions"] == [] and comparison["missing_tasks"] == []
    (task,) = comparison["tasks"]
    regressed = sorted(m["metric"] for m in task["metrics"] if m["change"] == "regression")
    assert regressed == ["reward", "user_p_tagged"]
    same = subprocess.run(orchestra("compare", str(baseline), str(baseline)), capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert same.returncode == 0, same.stdout + same.stderr


@pytest.mark.skipif(CHROMIUM is None, reason=MISSING_REASON)
def test_real_report_in_chromium(real_jobs: tuple[Path, Path], tmp_path: Path) -> None:
    _, candidate = real_jobs
    subprocess.run(orchestra("report", str(candidate)), check=True, capture_output=True, timeout=60)
    page = (candidate / "report.html").as_uri()
    dom = dump_dom(page, tmp_path / "profile-dom")
    assert 'class="mention notified"' in dom and "graded: selected_message_id" in dom
    shot = screenshot(page, tmp_path / "profile-shot", tmp_path / "real.png", 1200, 1300)
    colours = colour_counts(shot)
    assert colours[NOTIFIED_MENTION_RGB] > 100  # the task's @solo-1 mention, highlighted
    assert colours[GRADED_OUTLINE_RGB] > 200  # the graded answer, outlined
