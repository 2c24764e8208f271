"""The parameters of `benchmark`, `resume`, `stack`, `cleanup`, `compare` and `task check`, built
from the `RunConfig` fields that declare them (`orchestra.documents.options`; orchestrator.md
§2.2): flag, help, bounds, metavar and whether `resume` takes an option are the field's. A command
names the options it takes (`with_options`) and receives them as keyword arguments named as
their fields (`n_concurrent`, `settle_ms`), so `given_options` turns what the command line gave
into `RunConfig.updated`'s input. The few flags that are the command's own (`--config`,
`--dry-run`) are declared here once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer._click.core import ParameterSource  # typer >= 0.26 vendors click

from orchestra.documents.options import Bounds, RunOption, options_of
from orchestra.documents.run_config import OPTION_PATHS, RunConfig

#: every run option the command line knows, in the model's order
RUN_OPTIONS = options_of(RunConfig)
#: those `orchestra resume` takes (the field says `resumable`)
RESUMABLE = tuple(name for name, option in RUN_OPTIONS.items() if option.resumable)

Command = TypeVar("Command", bound=Callable[..., Any])


def choice(values: Iterable[str]) -> Callable[[str], str]:
    """A parser accepting exactly `values` (the enums' own, so each list is written once)."""
    allowed = [str(value) for value in values]

    def parse(value: str) -> str:
        if value not in allowed:
            shown = ", ".join(repr(allowed_value) for allowed_value in allowed)
            raise typer.BadParameter(f"{value!r} is not one of {shown}")
        return value

    return parse


def metavar(values: Iterable[str]) -> str:
    return "[" + "|".join(values) + "]"


def bounded(kind: type[float], bounds: Bounds) -> Callable[[str], float]:
    """A parser for a number with an open bound (`0<x<1`), which click's ranges do not have."""

    def parse(value: str) -> float:
        try:
            number = kind(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not a valid {kind.__name__}.") from None
        if not bounds.contains(number):
            raise typer.BadParameter(f"{value} is not in the range {bounds.text()}.")
        return number

    return parse


def with_options(
    names: Iterable[str],
    *,
    defaults: Mapping[str, Any] | None = None,
    model_defaults: bool = True,
    notes: Mapping[str, str] | None = None,
) -> Callable[[Command], Command]:
    """Add a parameter for each run option in `names` to the command's signature (after its
    own; the command takes them as `**options`). Their defaults are the model's, None for a
    command whose options not given mean "as before" (`model_defaults` False; a flag's is
    False either way), or the command's own in `defaults`; `notes` adds a default's meaning."""

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        added = [
            _parameter(
                RUN_OPTIONS[name],
                _default(RUN_OPTIONS[name], defaults or {}, model_defaults),
                (notes or {}).get(name),
            )
            for name in names
        ]
        command.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
        return command

    return decorate


def _default(option: RunOption, defaults: Mapping[str, Any], model_defaults: bool) -> Any:
    if option.name in defaults:
        return defaults[option.name]
    default = option.default
    if option.value_type is bool:
        return default
    return default if model_defaults and default not in (None, []) else None


def _parameter(option: RunOption, default: Any, note: str | None) -> inspect.Parameter:
    """The typer parameter of `option`: its flags, help, metavar, bounds and choices."""
    kind = option.value_type
    settings: dict[str, Any] = {"help": option.help, "metavar": option.metavar}
    if option.choices:
        settings |= {"parser": choice(option.choices), "metavar": metavar(option.choices)}
    elif kind in (int, float) and option.bounds.closed:
        settings |= {"min": option.bounds.ge, "max": option.bounds.le}
    elif kind in (int, float):
        settings["parser"] = bounded(kind, option.bounds)
        settings["help"] += f"  [{option.bounds.text()}]"
    shown_note = note or option.default_note
    if shown_note is not None and default is None:
        settings["help"] += f"  [default: {shown_note}]"
    if kind is bool:
        settings.pop("metavar")
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[
            kind if kind is bool else kind | None, typer.Option(*option.flags, **settings)
        ],
    )


# --- the commands' own flags ----------------------------------------------------------------

ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="Read the run's options from FILE (YAML or JSON, as --print-config writes them); "
        "options given on the command line win.",
    ),
]
PrintConfig = Annotated[
    bool,
    typer.Option("--print-config", help="Print the options in effect (YAML) and exit."),
]
Dataset = Annotated[
    str | None,
    typer.Option(
        "--dataset",
        "-d",
        metavar="PATH",
        help="Like --path, for Harbor familiarity: a local dataset directory only.",
    ),
]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Make every check that needs no stack, print the run and plan, start nothing.",
    ),
]
AllowMissingKeys = Annotated[
    bool,
    typer.Option(
        "--allow-missing-keys",
        help="With --dry-run: report missing API keys as warnings, not errors.",
    ),
]
CheckEndpoints = Annotated[
    bool,
    typer.Option("--check-endpoints", help="With --dry-run: also send the live endpoint check."),
]
SkipEndpointCheck = Annotated[
    bool,
    typer.Option(
        "--skip-endpoint-check",
        help="Do not send the one live request per endpoint that preflight sends.",
    ),
]


def given_options(ctx: typer.Context, values: Mapping[str, Any]) -> dict[str, Any]:
    """The `RunConfig` options among `values` that the command line gave (not defaults)."""
    given = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    return {
        name: value
        for name, value in values.items()
        if name in OPTION_PATHS and ctx.get_parameter_source(name) in given
    }
