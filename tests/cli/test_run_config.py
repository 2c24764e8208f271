"""`--config FILE` and `--print-config`: a file holds any `RunConfig` option, the flags
given on the command line win, the printed config reads back as a file, and a bad file is one
line naming the file and the field."""

from pathlib import Path

import yaml
from typer.testing import CliRunner

from orchestra.cli.main import app
from orchestra.documents.enums import StackMode
from orchestra.documents.run_config import RunConfig
from orchestra.run.prepare import resumed_config


def printed(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, ["benchmark", *args, "--print-config"])
    return done.exit_code, done.stdout, done.stderr


def test_flags_given_win_over_the_file_and_the_printed_config_reads_back(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("n_concurrent: 2\nrelay_port: 3700\ntrial:\n  settle_ms: 100\n")
    code, out, err = printed("--config", str(config), "-n", "3")
    assert code == 0, err
    shown = yaml.safe_load(out)
    assert (shown["n_concurrent"], shown["relay_port"], shown["trial"]["settle_ms"]) == (
        3,
        3700,
        100,
    )
    again = tmp_path / "again.yaml"
    again.write_text(out)
    code, out_again, _ = printed("--config", str(again))
    assert code == 0 and out_again == out


def test_a_bad_config_file_is_one_line_naming_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("n_concurent: 2\n")
    code, out, err = printed("--config", str(config))
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"error: {config}: n_concurent: unknown option (did you mean n_concurrent?)"
    ]
    config.write_text("relay_port: 70000\n")
    code, _, err = printed("--config", str(config))
    [line] = err.splitlines()
    assert code == 1 and line.startswith(f"error: {config}: relay_port: "), line


def test_resume_takes_the_stored_config_updated_by_the_flags_given() -> None:
    stored = RunConfig(
        n_concurrent=4, stack=StackMode.EXTERNAL, relay_url="ws://a", database_url="postgresql://d"
    ).stored()
    assert resumed_config(stored, {"n_concurrent": 1}) == stored.updated({"n_concurrent": 1})
    assert resumed_config(stored, {"stack": "auto"}) == stored  # auto: the run's own
    moved = resumed_config(stored, {"stack": "embedded"})
    assert (moved.stack, moved.relay_url, moved.database_url) == (StackMode.EMBEDDED, None, None)
