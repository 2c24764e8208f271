"""Running one task's verifier the way a local-env trial does (`run_local_verifier` over
`VerifierInputs`), in a fresh trial directory that holds no agent workspace."""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from orchestra.config.task import Task
from orchestra.paths import TrialPaths
from orchestra.verify.inputs import VerifierInputs
from orchestra.verify.local import run_local_verifier
from orchestra.verify.reward import VerifierFailure, VerifierTimeout, details_error

#: `{{random_hex}}` of fixture files when no trial rendered them (cases, the workspace check).
CASE_RANDOM_HEX = "0123456789abcdef" * 2


@dataclass(frozen=True)
class Verdict:
    """What one verifier run left: its metrics (empty when it wrote none), the details'
    `error`, a failure the harness would record, and how long it took."""

    rewards: dict[str, float]
    error: str | None
    failure: str | None
    seconds: float
    timed_out: bool = False


def rendered_fixture_files(
    task: Task, random_hex: str = CASE_RANDOM_HEX
) -> list[tuple[str, bytes, int]]:
    return [
        (file.path, file.render(random_hex).encode("utf-8"), file.mode_bits)
        for file in task.fixture.files
    ]


def run_verifier(
    task: Task,
    evidence: bytes | None,
    *,
    fixture_files: list[tuple[str, bytes, int]] | None = None,
) -> Verdict:
    """The task's `tests/test.sh` over `evidence` (None: no evidence file) under the task's
    verifier timeout, in a temporary trial directory."""
    inputs = VerifierInputs.assemble(
        evidence=evidence,
        tests=task.tests,
        fixture_files=rendered_fixture_files(task) if fixture_files is None else fixture_files,
    )
    timeout = task.toml.verifier.timeout_sec
    with tempfile.TemporaryDirectory(prefix="orchestra-task-check-") as scratch:
        paths = TrialPaths(Path(scratch) / "trial")
        paths.root.mkdir()
        started = time.monotonic()
        try:
            run = asyncio.run(
                run_local_verifier(paths, task.fixture.home, inputs, timeout, lambda _line: None)
            )
        except VerifierFailure as failure:
            return Verdict(
                failure.rewards or {},
                details_error(paths.verifier_dir),
                f"{type(failure).__name__}: {failure}",
                time.monotonic() - started,
                timed_out=isinstance(failure, VerifierTimeout),
            )
        return Verdict(run.rewards, None, None, time.monotonic() - started)
