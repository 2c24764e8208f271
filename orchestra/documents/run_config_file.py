"""A run's options read from a `--config` file (YAML or JSON) and the one line that says why
options do not validate (orchestrator.md §2.7)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import yaml
from pydantic import ValidationError

from orchestra.config.errors import TOP_LEVEL, ConfigError, display_path, from_validation_error
from orchestra.documents.run_config import OPTION_PATHS, RunConfig


def load_run_config(path: Path) -> RunConfig:
    """A `--config` file (YAML, or JSON, which YAML reads too); `ConfigError` naming the file
    and the field (with a suggestion for a misspelt option)."""
    shown = display_path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(shown, "", f"cannot read ({error.strerror or error})") from None
    except yaml.YAMLError as error:
        raise ConfigError(shown, "", f"not valid YAML or JSON ({error})") from None
    if not isinstance(data, dict):
        raise ConfigError(shown, "", "must be a mapping of option names to values")
    try:
        return RunConfig.model_validate_json(json.dumps(data))
    except (TypeError, ValueError) as error:
        if not isinstance(error, ValidationError):
            raise ConfigError(shown, "", f"not a plain YAML value ({error})") from None
        first = from_validation_error(shown, error)[0]
        problem = first.problem
        if error.errors()[0]["type"] == "extra_forbidden":
            problem = "unknown option" + _did_you_mean(first.field)
        field = "" if first.field == TOP_LEVEL else first.field
        raise ConfigError(first.file, field, problem) from None


def _did_you_mean(field: str) -> str:
    leaf = field.rpartition(".")[2]
    known = [*RunConfig.model_fields, *OPTION_PATHS]
    close = difflib.get_close_matches(leaf, known, n=1)
    return f" (did you mean {'.'.join(OPTION_PATHS.get(close[0], (close[0],)))}?)" if close else ""


def options_problem(error: ValidationError, file: Path | None = None) -> str:
    """One line for options that do not validate: the file when there is one, the option
    unless the problem names it (`hard_cost_cap needs max_cost_usd`)."""
    first = from_validation_error(display_path(file) if file else "", error)[0]
    where = [first.file] if file is not None else []
    where += [first.field] if first.field != TOP_LEVEL else []
    return ": ".join([*where, first.problem])
