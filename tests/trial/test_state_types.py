"""The trial's working state stays typed, and `orchestra.trial` has no import cycle
(docs/decisions.md D71).

The state's field types are read at run time from `TrialState` down through every dataclass of
`orchestra.trial` and every document model they hold, so an `Any` hidden in an alias or a
nested part is found too. Imports are read with `ast`, `TYPE_CHECKING` ones included: a cycle
hidden behind `TYPE_CHECKING` is still one (it was how `record` and `state` imported each other).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args, get_type_hints

from pydantic import BaseModel

from orchestra.paths import PROJECT_ROOT
from orchestra.trial.state import TrialState

TRIAL_PACKAGE = PROJECT_ROOT / "orchestra" / "trial"


def holds_any(hint: object) -> bool:
    return hint is Any or any(holds_any(argument) for argument in get_args(hint))


def classes_in(hint: object) -> Iterator[type]:
    if isinstance(hint, type):
        yield hint
    for argument in get_args(hint):
        yield from classes_in(argument)


def field_types(cls: type) -> dict[str, object]:
    if issubclass(cls, BaseModel):
        return {name: info.annotation for name, info in cls.model_fields.items()}
    hints = get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls)}


#: Where the dataclasses and models whose fields are part of the trial's state are defined
STATE_PACKAGES = ("orchestra.trial.", "orchestra.documents.")


def is_state_part(cls: type, packages: tuple[str, ...]) -> bool:
    """A dataclass or a document model of `packages`: its fields are part of the state."""
    return (dataclasses.is_dataclass(cls) or issubclass(cls, BaseModel)) and (
        cls.__module__.startswith(packages)
    )


def untyped_fields(root: type, packages: tuple[str, ...] = STATE_PACKAGES) -> list[str]:
    found, seen, pending = [], set(), [root]
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for name, hint in field_types(cls).items():
            if holds_any(hint):
                found.append(f"{cls.__module__}.{cls.__qualname__}.{name}: {hint}")
            pending += [part for part in classes_in(hint) if is_state_part(part, packages)]
    return sorted(found)


def test_the_trial_state_holds_no_any() -> None:
    assert untyped_fields(TrialState) == []


@dataclasses.dataclass
class UntypedPart:
    verifier: dict[str, Any]


@dataclasses.dataclass
class StateWithAnUntypedPart:
    parts: list[UntypedPart] | None


def test_the_check_finds_an_any_nested_in_a_part() -> None:
    found = untyped_fields(StateWithAnUntypedPart, packages=(__name__,))
    assert found == [f"{__name__}.UntypedPart.verifier: {dict[str, Any]}"]


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def trial_imports() -> dict[str, set[str]]:
    """Each `orchestra.trial` module -> the `orchestra.trial` modules it imports anywhere."""
    modules = {module_name(path): path for path in TRIAL_PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    candidate = f"{node.module}.{alias.name}"
                    imported.add(candidate if candidate in modules else node.module)
        graph[module] = {name for name in imported if name in modules and name != module}
    return graph


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules in order, the first repeated at the end), or None."""
    finished: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in finished:
            return None
        for imported in sorted(graph[module]):
            cycle = visit(imported, [*path, module])
            if cycle is not None:
                return cycle
        finished.add(module)
        return None

    return next((c for m in sorted(graph) if (c := visit(m, [])) is not None), None)


def test_no_trial_module_imports_itself_back() -> None:
    graph = trial_imports()
    assert "orchestra.trial.state" in graph["orchestra.trial.record"]  # the graph is read
    assert cycle_in(graph) is None


def test_the_cycle_check_finds_a_loop() -> None:
    graph = {"record": {"state"}, "state": {"recorder", "record"}, "recorder": set()}
    assert cycle_in(graph) == ["record", "state", "record"]
