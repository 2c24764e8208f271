"""The package type-checks: `mypy` with `pyproject.toml`'s configuration (strict) reports nothing.

Run as a subprocess so the test is exactly `just lint`'s checker step, and fails with mypy's own
report. mypy's incremental cache (`.mypy_cache/` in the checkout) makes a warm run quick.
"""

from __future__ import annotations

import subprocess
import sys

from orchestra.paths import PROJECT_ROOT


def test_mypy_reports_no_errors() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-color-output", "--no-error-summary"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = (result.stdout + result.stderr).strip()
    assert result.returncode == 0, f"mypy found problems:\n{report}"
    assert report == "", f"mypy printed:\n{report}"
