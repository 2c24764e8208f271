"""Fixtures of the report tests."""

from pathlib import Path

import pytest
from jobs_builder import build_job
from report_samples import sample_trials


@pytest.fixture
def sample_job(tmp_path: Path) -> Path:
    return build_job(tmp_path / "jobs", "sample-job", sample_trials(), attempts=2)
