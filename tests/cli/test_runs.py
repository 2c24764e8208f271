"""The resume command a stopped run prints: exact, and never a secret."""

from dataclasses import replace
from pathlib import Path

import pytest
from runs_support import DATASET, run_request

from orchestra.cli.run_output import resume_command
from orchestra.documents.enums import EnvKind, StackMode
from orchestra.jobs.run import choose_run
from orchestra.run.prepare import RunPlan
from orchestra.run.scope import RunScope, masked_database_url, storable_database_url
from orchestra.stack.select import Modes


@pytest.fixture
def plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunPlan:
    monkeypatch.setattr("sys.argv", ["/opt/venv/bin/orchestra", "benchmark"])
    request = run_request(DATASET / "user-mention")
    target, _ = choose_run(tmp_path, request, run_name="r", job_name=None, new_run=False)
    stored = target.record.settings
    scope = RunScope(target.jobs, target.paths.root, stored, target.paths.root, target)
    return RunPlan(scope, request.condition, Modes(StackMode.EMBEDDED, EnvKind.LOCAL), stored)


def test_the_resume_command_repeats_only_what_the_run_does_not_store(plan: RunPlan) -> None:
    assert resume_command(plan) == f"/opt/venv/bin/orchestra resume {plan.scope.path}"
    given = {
        "n_concurrent": 1, "keep_errors": True, "quiet": True, "timeout_multiplier": 2.0,
        "stack": "external", "relay_url": "ws://relay:3600",
        "database_url": "postgresql://bench:hunter2@db:5432/buzz",
    }  # fmt: skip
    changed = replace(
        plan,
        modes=Modes(StackMode.EXTERNAL, EnvKind.LOCAL),
        effective=plan.effective.updated(given),
    )
    assert resume_command(changed) == (
        f"/opt/venv/bin/orchestra resume {plan.scope.path} --n-concurrent 1 "
        "--stack external --relay-url ws://relay:3600 "
        "--database-url postgresql://bench:PASSWORD@db:5432/buzz --timeout-multiplier 2 "
        "--keep-errors --quiet"
    )
    assert "hunter2" not in resume_command(changed)


def test_a_database_url_with_a_password_is_never_stored() -> None:
    assert storable_database_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert storable_database_url("postgresql://u:secret@h/db") is None
    assert masked_database_url("postgresql://u:secret@h:1/db?x=1") == (
        "postgresql://u:PASSWORD@h:1/db?x=1"
    )
