"""Shared fixtures of the end-to-end dataset tests (helpers live in e2e_jobs.py).

* `scratch` (module): a private directory for jobs, state and task copies, outside pytest's
  temp tree.
* `run_job` (module): `run_job(path, job_name, *stack_args) -> JobRun` runs one real local-env
  `orchestra benchmark` job in `scratch` (see `e2e_jobs.run_orchestra_job`).
* `embedded_stack_args` (module): `--stack embedded` options with a free `--relay-port`.
"""

import shutil
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from e2e_jobs import JobRun, free_port, run_orchestra_job


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """Outside pytest's temp tree: pytest resets it to mode 0700, which would lock out the
    unprivileged user that the embedded stack's PostgreSQL runs as when tests run as root."""
    path = Path(tempfile.mkdtemp(prefix="buzz-e2e-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def embedded_stack_args() -> list[str]:
    return ["--stack", "embedded", "--relay-port", str(free_port())]


@pytest.fixture(scope="module")
def run_job(scratch: Path) -> Callable[..., JobRun]:
    return partial(run_orchestra_job, scratch)
