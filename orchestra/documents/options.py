"""A run option, declared once: its `RunConfig` field says what it means (the help text), its
bounds, its flags on the command line and whether `orchestra resume` takes it
(orchestrator.md §2.2). The commands build their parameters from these fields
(`orchestra.cli.options`), so adding an option is adding a field.
"""

from __future__ import annotations

import enum
import types
from dataclasses import dataclass, replace
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo


def option(
    default: Any,
    *flags: str,
    description: str,
    metavar: str | None = None,
    resumable: bool = False,
    default_note: str | None = None,
    **field: Any,
) -> Any:
    """A run option's field: its `description` is the help text; `flags` its spellings on the
    command line (the long one first); `resumable` whether `resume` takes it; `default_note`
    what a default that is not a value means (`every task`). The rest goes to `Field` (bounds,
    `exclude`, `default_factory`)."""
    extra: dict[str, Any] = {"flags": list(flags), "resumable": resumable}
    if metavar is not None:
        extra["metavar"] = metavar
    if default_note is not None:
        extra["default_note"] = default_note
    if "default_factory" in field:
        return Field(description=description, json_schema_extra=extra, **field)
    return Field(default, description=description, json_schema_extra=extra, **field)


@dataclass(frozen=True)
class RunOption:
    """One option as its field declares it (`name`: the field's own, nested or not)."""

    name: str
    field: FieldInfo

    @property
    def _extra(self) -> dict[str, Any]:
        extra = self.field.json_schema_extra
        return extra if isinstance(extra, dict) else {}

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(self._extra.get("flags", ()))

    @property
    def flag(self) -> str:
        """The long flag (`--n-concurrent`)."""
        return self.flags[0]

    @property
    def help(self) -> str:
        return self.field.description or ""

    @property
    def metavar(self) -> str | None:
        value = self._extra.get("metavar")
        return value if isinstance(value, str) else None

    @property
    def resumable(self) -> bool:
        return bool(self._extra.get("resumable"))

    @property
    def default_note(self) -> str | None:
        value = self._extra.get("default_note")
        return value if isinstance(value, str) else None

    @property
    def default(self) -> Any:
        return self.field.get_default(call_default_factory=True)

    @property
    def value_type(self) -> Any:
        """The type of its value, None left out (`list[str]` stays a list); a choice's is
        `str`, as it is spelt."""
        args = [arg for arg in _union_args(self.field.annotation) if arg is not type(None)]
        return args[0] if len(args) == 1 and not self.choices else str

    @property
    def choices(self) -> tuple[str, ...]:
        """The values of a choice (literals first, then enum members); () for other types."""
        literals: list[str] = []
        members: list[str] = []
        for arg in _union_args(self.field.annotation):
            if get_origin(arg) is Literal:
                literals += [str(value) for value in get_args(arg)]
            elif isinstance(arg, type) and issubclass(arg, enum.Enum):
                members += [str(member.value) for member in arg]
        return (*literals, *members)

    @property
    def bounds(self) -> Bounds:
        found = Bounds()
        for item in self.field.metadata:
            for name in ("ge", "gt", "le", "lt"):
                value = getattr(item, name, None)
                if isinstance(value, int | float):
                    found = found.with_(name, value)
        return found


@dataclass(frozen=True)
class Bounds:
    """A number's bounds as its field declares them (None: unbounded that side)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def with_(self, name: str, value: float) -> Bounds:
        return replace(self, **{name: value})

    @property
    def closed(self) -> bool:
        """No open side: the command line's own range types check them."""
        return self.gt is None and self.lt is None

    def contains(self, value: float) -> bool:
        return not (
            (self.ge is not None and value < self.ge)
            or (self.gt is not None and value <= self.gt)
            or (self.le is not None and value > self.le)
            or (self.lt is not None and value >= self.lt)
        )

    def text(self) -> str:
        """As the command line shows a range: `x>=1`, `0<x<1`, `1<=x<=65535`."""
        low = (">=", self.ge) if self.ge is not None else (">", self.gt)
        high = ("<=", self.le) if self.le is not None else ("<", self.lt)
        if low[1] is not None and high[1] is not None:
            return f"{_number(low[1])}{low[0].replace('>', '<')}x{high[0]}{_number(high[1])}"
        if low[1] is not None:
            return f"x{low[0]}{_number(low[1])}"
        return f"x{high[0]}{_number(high[1])}" if high[1] is not None else ""


def _number(value: float) -> str:
    return f"{value:g}"


def _union_args(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(arg for member in get_args(annotation) for arg in _union_args(member))
    return (annotation,)


def options_of(model: type[BaseModel]) -> dict[str, RunOption]:
    """Every field of `model` and of its nested groups that declares flags, by field name, in
    the model's order (names are unique across groups)."""
    found: dict[str, RunOption] = {}
    for name, field in model.model_fields.items():
        group = field.annotation
        if isinstance(group, type) and issubclass(group, BaseModel):
            found |= options_of(group)
        elif RunOption(name, field).flags:
            found[name] = RunOption(name, field)
    return found
