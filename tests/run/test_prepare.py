"""What `benchmark` and `resume` work on (orchestra/run/prepare.py): the config a new run
stores, the effective config a resume makes of the stored one and the options given (each
resumable option in effect, none of them stored), and the refusals, each one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from runs_support import DATASET, run_request, start_run

from orchestra.cli.options import RESUMABLE
from orchestra.documents.enums import EnvKind, ExecutorKind, StackMode
from orchestra.documents.run_config import AUTO, RunConfig
from orchestra.run.execution import Execution
from orchestra.run.outcome import Refused, RunEnd
from orchestra.run.prepare import plan_benchmark, plan_resume, resumed_config, stored_config
from orchestra.stack.select import Modes

#: a value other than the stored one for every option `resume` takes
GIVEN: dict[str, Any] = {
    "endpoint_config": Path("/elsewhere/endpoints.json"),
    "n_concurrent": 1,
    "stack": StackMode.EXTERNAL,
    "env": EnvKind.DOCKER,
    "relay_url": "ws://relay.example:3600",
    "database_url": "postgresql://bench@db.example/buzz",
    "relay_port": 3611,
    "state_dir": Path("/elsewhere/state"),
    "timeout_multiplier": 2.5,
    "settle_ms": 0,
    "buzz_bin_dir": Path("/elsewhere/bin"),
    "report": True,
    "retries": 3,
    "provider_error_limit": 0,
    "max_cost_usd": 1.25,
    "hard_cost_cap": True,
    "executor": ExecutorKind.RAY,
    "ray_address": "ray://head:10001",
    "ray_slots_per_node": None,  # set alone below: it excludes ray_address
    "keep_errors": True,
    "quiet": True,
    "strict_endpoints": True,
    "no_floor": True,
}
#: what an option needs beside it to be valid
NEEDS: dict[str, dict[str, Any]] = {
    "hard_cost_cap": {"max_cost_usd": 1.0},
    "ray_address": {"executor": ExecutorKind.RAY},
    "ray_slots_per_node": {"executor": ExecutorKind.RAY},
}


@pytest.fixture
def stored() -> RunConfig:
    """A run's stored config: an embedded stack, local env, the default controls."""
    return run_request(DATASET / "user-mention").config.stored()


def test_every_option_resume_takes_has_a_case_here() -> None:
    assert set(GIVEN) == set(RESUMABLE)


@pytest.mark.parametrize("name", sorted(GIVEN))
def test_each_resumable_option_given_is_in_effect_and_the_stored_config_keeps_its_own(
    stored: RunConfig, name: str
) -> None:
    value = GIVEN[name] if GIVEN[name] is not None else 2
    effective = resumed_config(stored, {**NEEDS.get(name, {}), name: value})
    assert effective.option_value(name) == value
    assert effective.stored().option_value(name) == (
        stored.option_value(name)
        if name in ("keep_errors", "quiet", "strict_endpoints", "no_floor")
        else value
    )  # the command's own options are never stored
    assert stored.option_value(name) != value  # the case changes something


def test_stack_auto_keeps_the_runs_stack_and_a_relay_url_alone_asks_for_external(
    stored: RunConfig,
) -> None:
    assert resumed_config(stored, {"stack": AUTO}).stack is StackMode.EMBEDDED
    assert resumed_config(stored, {"env": AUTO}).env is EnvKind.LOCAL
    external = resumed_config(stored, {"relay_url": "ws://r:1"})
    assert (external.stack, external.relay_url) == (AUTO, "ws://r:1")


def test_another_stack_than_external_drops_the_stored_relay_and_database_urls(
    stored: RunConfig,
) -> None:
    on_external = resumed_config(
        stored, {"stack": StackMode.EXTERNAL, "relay_url": "ws://r:1", "database_url": "pg://d"}
    )
    back = resumed_config(on_external, {"stack": StackMode.EMBEDDED})
    assert (back.stack, back.relay_url, back.database_url) == (StackMode.EMBEDDED, None, None)


def test_a_new_run_stores_absolute_paths_the_chosen_modes_and_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    request = run_request(DATASET / "user-mention")
    config = RunConfig().updated(
        {
            "paths": [DATASET / "user-mention"],
            "jobs_dir": Path("jobs"),
            "state_dir": Path("state"),
            "buzz_bin_dir": Path("bin"),
            "database_url": "postgresql://bench:hunter2@db/buzz",
            "keep_errors": True,
        }
    )
    stored = stored_config(config, Modes(StackMode.EMBEDDED, EnvKind.LOCAL), request.condition)
    assert stored.jobs_dir == tmp_path / "jobs" and stored.state_dir == tmp_path / "state"
    assert stored.trial.buzz_bin_dir == tmp_path / "bin"
    assert stored.selection.paths == [DATASET / "user-mention"]
    assert (stored.stack, stored.env) == (StackMode.EMBEDDED, EnvKind.LOCAL)
    assert stored.database_url is None and "hunter2" not in stored.model_dump_json()
    assert stored.keep_errors is False  # a command-only option


def test_resume_of_a_run_reads_its_stored_config_and_lays_the_options_over_it(
    tmp_path: Path,
) -> None:
    record = start_run(tmp_path, run_request(DATASET / "user-mention"), run_name="r")
    plan = plan_resume(tmp_path / "r", {"n_concurrent": 1, "keep_errors": True})
    assert plan.scope.stored == record.settings and plan.scope.stored.n_concurrent == 2
    assert (plan.effective.n_concurrent, plan.effective.keep_errors) == (1, True)
    assert plan.modes == Modes(StackMode.EMBEDDED, EnvKind.LOCAL)


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"paths": [Path("/no/such/dataset")]}, "/no/such/dataset: does not exist"),
        ({"include": ["nothing-*"]}, "no tasks selected (path="),
        ({"manifest": Path("/no/manifest.yaml")}, "/no/manifest.yaml"),
        ({"stack": StackMode.EXTERNAL}, "--relay-url"),
    ],
)
def test_a_benchmark_that_cannot_start_is_refused_in_one_line(
    given: dict[str, Any], problem: str
) -> None:
    config = RunConfig().updated({"env": EnvKind.LOCAL, **given})
    with pytest.raises(Refused) as refused:
        plan_benchmark(config, Execution.of(config))
    assert refused.value.end is RunEnd.USAGE and refused.value.exit_code == 1
    assert problem in str(refused.value)


def test_resume_of_a_directory_that_is_no_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Refused) as refused:
        plan_resume(tmp_path, {})
    assert refused.value.end is RunEnd.USAGE
    assert len(str(refused.value).splitlines()) == 1
