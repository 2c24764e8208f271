"""The resume command a stopped run prints: exact, and never a secret."""

from pathlib import Path

import pytest
from runs_support import DATASET, run_request

from orchestra.cli.runs import (
    Invocation,
    Unit,
    masked_database_url,
    resume_command,
    storable_database_url,
)
from orchestra.jobs.run import choose_run
from orchestra.stack.select import Modes
from orchestra.trial.context import RunOptions


def invocation(**changes: object) -> Invocation:
    fields: dict = {
        "n_concurrent": 2, "keep_errors": False, "quiet": False, "report": False,
        "state_dir": Path("/state"), "relay_port": 3600, "relay_url": None,
        "database_url": None, "endpoint_config": Path("endpoints/oracle.json").absolute(),
    }  # fmt: skip
    return Invocation(**(fields | changes))


@pytest.fixture
def unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Unit:
    monkeypatch.setattr("sys.argv", ["/opt/venv/bin/orchestra", "benchmark"])
    target, _ = choose_run(
        tmp_path, run_request(DATASET / "user-mention"), run_name="r", job_name=None,
        new_run=False,
    )  # fmt: skip
    record = target.record
    return Unit(target.jobs, target.paths.root, record.settings, "local", target.paths.root, target)


def test_the_resume_command_repeats_only_what_the_run_does_not_store(unit: Unit) -> None:
    modes, options = Modes("embedded", "local"), RunOptions()
    plain = resume_command(unit, modes, options, invocation())
    assert plain == f"/opt/venv/bin/orchestra resume {unit.path}"
    changed = resume_command(
        unit,
        Modes("external", "local"),
        RunOptions(timeout_multiplier=2.0),
        invocation(
            n_concurrent=1, keep_errors=True, quiet=True, relay_url="ws://relay:3600",
            database_url="postgresql://bench:hunter2@db:5432/buzz",
        ),
    )  # fmt: skip
    assert changed == (
        f"/opt/venv/bin/orchestra resume {unit.path} -n 1 --timeout-multiplier 2 "
        "--stack external --relay-url ws://relay:3600 "
        "--database-url postgresql://bench:PASSWORD@db:5432/buzz --keep-errors -q"
    )
    assert "hunter2" not in changed


def test_a_database_url_with_a_password_is_never_stored() -> None:
    assert storable_database_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert storable_database_url("postgresql://u:secret@h/db") is None
    assert masked_database_url("postgresql://u:secret@h:1/db?x=1") == (
        "postgresql://u:PASSWORD@h:1/db?x=1"
    )
