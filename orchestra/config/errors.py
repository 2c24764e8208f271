"""Configuration errors: one line each, naming the file, the field and the problem."""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from orchestra.errors import OrchestraError

_MAX_VALUE_CHARS = 100


class ConfigError(OrchestraError):
    """One configuration problem; `str()` is `<file>: <field>: <problem>` on one line.

    `errors` is the tuple of single problems, so callers handle `ConfigError` and
    `ConfigErrors` alike: `for err in exc.errors: print(f"error: {err}")`.
    """

    def __init__(self, file: str, field: str, problem: str, *, message: str | None = None) -> None:
        self.file = file
        self.field = field
        self.problem = problem
        self.message = message if message is not None else _join(file, field, problem)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    @property
    def errors(self) -> tuple[ConfigError, ...]:
        return (self,)


class ConfigErrors(ConfigError):
    """Several problems reported together; `str()` has one line per problem."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        flat = tuple(single for err in errors for single in err.errors)
        if not flat:
            raise ValueError("ConfigErrors needs at least one error")
        first = flat[0]
        super().__init__(
            first.file, first.field, first.problem, message="\n".join(str(e) for e in flat)
        )
        self._errors = flat

    @property
    def errors(self) -> tuple[ConfigError, ...]:
        return self._errors


def raise_if_any(errors: Sequence[ConfigError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)


def _join(file: str, field: str, problem: str) -> str:
    return ": ".join(part for part in (file, field, problem) if part)


def find_duplicates(keyed: Iterable[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """`(key, where)` pairs → `(key, where, where it first appeared)` for every repeat."""
    first: dict[str, str] = {}
    repeats: list[tuple[str, str, str]] = []
    for key, where in keyed:
        if key in first:
            repeats.append((key, where, first[key]))
        else:
            first[key] = where
    return repeats


def display_path(path: Path | str) -> str:
    """The path as a person would type it: relative to the working directory when inside it."""
    path = Path(path)
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return path.as_posix()
    return path.as_posix()


def matching(pattern: re.Pattern[str], requirement: str) -> Callable[[str], str]:
    """A pydantic after-validator: the value when `pattern` matches it, else a `ValueError`
    that states the requirement and shows the value."""

    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"{requirement} (got {show_value(value)})")
        return value

    return check


def show_value(value: Any) -> str:
    """A short, single-line rendering of an offending value."""
    if isinstance(value, str):
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    elif isinstance(value, dict):
        text = "a mapping"
    elif isinstance(value, list | tuple):
        text = "a list"
    elif value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = repr(value)
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 1] + "…"
    return text


def dotted_field(loc: Iterable[str | int]) -> str:
    """`("roster", 0, "generation", "temperature")` → `roster[0].generation.temperature`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def toml_field(loc: Sequence[str | int]) -> str:
    """`("metadata", "evaluation_layer")` → `[metadata].evaluation_layer` (task.toml style)."""
    if len(loc) < 2 or not isinstance(loc[0], str):
        return dotted_field(loc)
    return f"[{loc[0]}]." + dotted_field(loc[1:]).lstrip(".")


_PROBLEMS = {
    "extra_forbidden": "unknown key",
    "missing": "required key is missing",
}


def _problem(error: ErrorDetails, known_keys: Sequence[str] = ()) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return _PROBLEMS[kind] + did_you_mean(str(error["loc"][-1]), known_keys)
    if kind in _PROBLEMS:
        return _PROBLEMS[kind]
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            # our own validators phrase the whole problem themselves
            return message[len(prefix) :]
    if kind in ("model_type", "dict_type"):
        message = "expected a mapping"
    else:
        message = message[0].lower() + message[1:] if message else kind
    value = error.get("input")
    # a container's own value adds nothing unless its type is what is wrong
    if "input" in error and (kind.endswith("_type") or not isinstance(value, dict | list)):
        message += f" (got {show_value(value)})"
    return message


#: the field of a problem with the whole document (a model validator's)
TOP_LEVEL = "(top level)"


def from_validation_error(
    file: str,
    exc: ValidationError,
    *,
    prefix: Sequence[str | int] = (),
    toml_style: bool = False,
    model: type[BaseModel] | None = None,
) -> list[ConfigError]:
    """Translate pydantic errors into one `ConfigError` per problem, each naming its path; with
    the `model` validated, an unknown key gets the closest key it allows ("did you mean")."""
    render = toml_field if toml_style else dotted_field
    errors: list[ConfigError] = []
    for error in exc.errors(include_url=False):
        own_loc = [part for part in error["loc"] if not _is_internal_loc(part)]
        known = keys_at(model, own_loc[:-1]) if model is not None else ()
        loc = [*prefix, *own_loc]
        errors.append(ConfigError(file, render(loc) or TOP_LEVEL, _problem(error, known)))
    return errors


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean "x"?)` for the closest candidate (difflib), or "" when none is close."""
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f' (did you mean "{close[0]}"?)' if close else ""


def keys_at(model: type[BaseModel], loc: Sequence[str | int]) -> tuple[str, ...]:
    """The field names of the model found by following `loc` from `model` (through nested
    models, lists and mappings); () when `loc` leads to no model."""
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return ()
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return tuple(current.model_fields)
    return ()


def _step(annotation: Any, part: str | int) -> Any:
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(str(part))
        return None if field is None else field.annotation
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if isinstance(origin, type) and issubclass(origin, Mapping) and len(args) == 2:
        return args[1]
    if isinstance(origin, type) and issubclass(origin, Sequence) and args:
        return args[0]
    return None


def _unwrap(annotation: Any) -> Any:
    """`Annotated[X, …]` → X; `X | None` → X (a union of several models stays as it is)."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _is_internal_loc(part: str | int) -> bool:
    # pydantic inserts validator/union tags such as "function-after[...]" into locations
    return isinstance(part, str) and ("[" in part or part.startswith("function-"))
