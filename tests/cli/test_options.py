"""Each run option is declared once, on its `RunConfig` field (orchestrator.md §2.2): the
commands' parameters are built from the fields, so flag, help, bounds and whether `resume`
takes an option are written in one place, and the command line enforces the model's bounds."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.cli.options import RESUMABLE, RUN_OPTIONS
from orchestra.documents.run_config import OPTION_PATHS, RunConfig
from orchestra.paths import PROJECT_ROOT

CLI = PROJECT_ROOT / "orchestra" / "cli"


def test_no_run_option_is_declared_or_copied_by_keyword_in_the_cli_more_than_once() -> None:
    sources = {path: path.read_text(encoding="utf-8") for path in sorted(CLI.rglob("*.py"))}
    repeated = {}
    for name in OPTION_PATHS:
        written = re.compile(rf"\b{name}\s*[:=](?!=)")
        places = [
            f"{path.name}:{number}"
            for path, text in sources.items()
            for number, line in enumerate(text.splitlines(), 1)
            if written.search(line)
        ]
        if len(places) > 1:
            repeated[name] = places
    assert repeated == {}
    assert "RESUME_OPTIONS" not in "".join(sources.values())


def test_every_option_with_a_flag_is_a_benchmark_option_and_resume_takes_the_resumable() -> None:
    runner = CliRunner()
    benchmark = runner.invoke(app, ["benchmark", "--help"], terminal_width=200).output
    resume = runner.invoke(app, ["resume", "--help"], terminal_width=200).output
    for name, option in RUN_OPTIONS.items():
        assert all(flag in benchmark for flag in option.flags), name
        assert (option.flag in resume) is (name in RESUMABLE), name
    assert set(RESUMABLE) == {
        "endpoint_config", "n_concurrent", "stack", "env", "relay_url", "database_url",
        "relay_port", "state_dir", "timeout_multiplier", "settle_ms", "buzz_bin_dir", "report",
        "retries", "provider_error_limit", "max_cost_usd", "hard_cost_cap", "executor",
        "ray_address", "ray_slots_per_node", "keep_errors", "quiet", "strict_endpoints", "no_floor",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--confirm-target", "1"], "1 is not in the range 0<x<1"),
        (["--confirm-target", "0"], "0 is not in the range 0<x<1"),
        (["--max-cost-usd", "0"], "0 is not in the range x>0"),
        (["--timeout-multiplier", "-1"], "-1 is not in the range x>0"),
        (["--settle-ms", "5001"], "--settle-ms"),
        (["-n", "0"], "--n-concurrent"),
        (["--relay-port", "70000"], "--relay-port"),
    ],
)
def test_the_command_line_refuses_what_the_model_refuses(args: list[str], problem: str) -> None:
    """The bounds are the field's: a value the command line takes, the model takes too."""
    result = CliRunner().invoke(app, ["benchmark", *args, "--print-config"])
    assert result.exit_code == 2 and problem in result.output, result.output
    name = next(name for name, o in RUN_OPTIONS.items() if args[0] in o.flags)
    with pytest.raises(ValueError):
        RunConfig().updated({name: float(args[1]) if "." in args[1] else int(args[1])})


def test_inside_the_bounds_the_command_line_and_the_model_agree() -> None:
    result = CliRunner().invoke(
        app, ["benchmark", "--confirm-target", "0.95", "--max-cost-usd", "0.5", "--print-config"]
    )
    assert result.exit_code == 0, result.output
    assert "confirm_target: 0.95" in result.output and "max_cost_usd: 0.5" in result.output


def test_the_help_stays_readable_at_a_narrow_width() -> None:
    for command in (["benchmark"], ["resume"], ["task", "check"], ["stack", "up"]):
        result = CliRunner().invoke(app, [*command, "--help"], terminal_width=60)
        assert result.exit_code == 0, result.output
        assert max(len(line) for line in result.output.splitlines()) <= 60, command
        assert "Traceback" not in result.output
