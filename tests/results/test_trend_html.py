"""The trend chart: report.html of several runs of one condition has it, a single run's does
not, `orchestra trend --html` writes it as a page: static SVG, no script."""

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from typer.testing import CliRunner

from orchestra.cli.main import app

#: the trend's charts (report.html also draws error bars, `<svg class="bar"`)
SVG = re.compile(r'<svg xmlns="http://www.w3.org/2000/svg" class="trend-.*?</svg>', re.S)
SVG_NS = "{http://www.w3.org/2000/svg}"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def charts(page: str) -> list[ET.Element]:
    return [ET.fromstring(svg) for svg in SVG.findall(page)]


def test_the_report_of_three_nightly_runs_draws_the_trend(
    three_runs: list[Path], tmp_path: Path
) -> None:
    code, _, stderr = invoke("report", *map(str, three_runs), "-o", str(tmp_path))
    assert code == 0, stderr
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Trend: buzz-native-solo-oracle</h2>" in page
    overall, tasks = charts(page)
    bars = [line for line in overall.iter(f"{SVG_NS}line") if line.get("stroke") == "#0969da"]
    assert len(bars) == 3 * 3  # an interval bar and its two caps per run
    titles = [t.text for t in overall.iter(f"{SVG_NS}title")]
    assert "#2 nightly-2 (2026-12-02 02:00): 4/5 passed, 0.80 (95% CI 0.38–0.96)" in titles
    rows = [t.text for t in tasks.iter(f"{SVG_NS}text")]
    assert "buzz-native/multiline-message" in rows and "flaky since #2" in rows
    assert "fails since #3" in rows
    assert len(list(tasks.iter(f"{SVG_NS}circle"))) == 4 * 3


def test_a_single_run_has_no_trend(three_runs: list[Path], tmp_path: Path) -> None:
    assert invoke("report", str(three_runs[0]), "-o", str(tmp_path))[0] == 0
    assert "Trend:" not in (tmp_path / "report.html").read_text()


def test_the_trend_page_is_static_and_escapes(three_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "trend.html"
    code, stdout, stderr = invoke("trend", *map(str, three_runs), "--html", str(out))
    assert code == 0 and stderr == f"wrote {out}\n"
    assert "flaky since #2" in stdout
    page = out.read_text()
    assert "<script" not in page and 'http-equiv="Content-Security-Policy"' in page
    assert len(charts(page)) == 2
