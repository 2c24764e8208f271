"""Fault plans for the oracle (orchestrator.md §4.5, "Fault injection").

An `oracle` endpoint's `ORACLE_*` env keys configure the oracle server, never the
agents. They are validated at preflight, so every error names the key and the value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal, TypeGuard, get_args

from pydantic import BaseModel, ConfigDict

from orchestra.settings import InvalidValue, Setting, SettingError

FaultKind = Literal["429", "500", "slow", "malformed", "unknown_tool", "truncated", "silent"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)  # one list of kinds: the type's
DEFAULT_SLOW_SECONDS = 5.0


class OracleConfigError(SettingError):
    """An invalid `ORACLE_*` setting of an endpoint; `str()` is `<key>: <reason>`."""


class FaultItem(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    kind: FaultKind
    count: int | None  # None (`<kind>:*`): every request from here on


class FaultPlan(BaseModel):
    """Which of one agent's first requests are replaced by which fault."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    items: tuple[FaultItem, ...] = ()
    slow_seconds: float = DEFAULT_SLOW_SECONDS

    def fault_for(self, request_number: int) -> FaultKind | None:
        """The fault replacing request `request_number` (1-based), or None."""
        remaining = request_number
        for item in self.items:
            if item.count is None or remaining <= item.count:
                return item.kind
            remaining -= item.count
        return None


def _is_fault_kind(word: str) -> TypeGuard[FaultKind]:
    return word in FAULT_KINDS


def parse_faults(text: str) -> tuple[FaultItem, ...]:
    """Parse `ORACLE_FAULTS`, e.g. `429:1,500:1,slow:2`; `silent:*` (`*`: every request from
    there on, the last item only) is the built-in `null` endpoint."""
    items: list[FaultItem] = []
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        kind, sep, count_text = entry.partition(":")
        kind = kind.strip()
        if not sep:
            raise InvalidValue(f'malformed item "{entry}" (expected <kind>:<N>)')
        if not _is_fault_kind(kind):
            raise InvalidValue(f'unknown fault kind "{kind}"')
        count_text = count_text.strip()
        if items and items[-1].count is None:
            raise InvalidValue(f'"{entry}" after an item with N "*" (every later request)')
        if count_text == "*":
            items.append(FaultItem(kind=kind, count=None))
            continue
        if not count_text.isdigit() or int(count_text) < 1:
            raise InvalidValue(f'malformed item "{entry}" (N must be an integer >= 1)')
        items.append(FaultItem(kind=kind, count=int(count_text)))
    return tuple(items)


def parse_slow_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidValue(f'not a number: "{text}"') from None
    if not math.isfinite(value) or value <= 0:
        raise InvalidValue(f'must be a number > 0, got "{text}"')
    return value


FAULTS = Setting("ORACLE_FAULTS", parse_faults, "", error=OracleConfigError)
SLOW_SECONDS = Setting(
    "ORACLE_SLOW_SECONDS", parse_slow_seconds, str(DEFAULT_SLOW_SECONDS), error=OracleConfigError
)
KNOWN_KEYS = (FAULTS.variable, SLOW_SECONDS.variable)


def fault_plan_from_env(env: Mapping[str, str]) -> FaultPlan:
    """Build the plan from an endpoint's env; non-`ORACLE_*` keys are not ours and are skipped."""
    for key in env:
        if key.startswith("ORACLE_") and key not in KNOWN_KEYS:
            raise OracleConfigError(key, "unknown oracle setting")
    return FaultPlan(items=FAULTS.value(env), slow_seconds=SLOW_SECONDS.value(env))
