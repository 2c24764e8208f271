"""The do-nothing floor in a condition's summary (orchestrator.md §11.2, docs/decisions.md D114):
the floor column's cells, the line under the table with the mean over tasks, and the count of
passes on tasks a do-nothing agent passes that came from trials that never called a tool."""

from __future__ import annotations

from orchestra.documents.floor import FLOOR_PASS
from orchestra.documents.summary import ConditionSummary, FloorSummary, LayerSummary
from orchestra.plural import plural
from orchestra.report.text.table import Column

#: The mark of a task a do-nothing agent passes, in the floor column and the report.
FLOOR_MARK = "*"

FLOOR_COLUMN = Column("floor", "Floor", "left", drop_rank=4)


def with_floor_column(
    columns: tuple[Column, ...], condition: ConditionSummary
) -> tuple[Column, ...]:
    """The summary's columns, the floor's after `Pass rate (all)` when the floor was computed."""
    if condition.floor is None:
        return columns
    at = next(i for i, column in enumerate(columns) if column.key == "pass_rate_all") + 1
    return (*columns[:at], FLOOR_COLUMN, *columns[at:])


def floor_cell(value: float | None) -> str:
    """`1.00*` for a task a do-nothing agent passes, `0.00`, or `—` (unknown)."""
    if value is None:
        return "—"
    return f"{value:.2f}{FLOOR_MARK if value >= FLOOR_PASS else ''}"


def layer_floor_text(layer: LayerSummary) -> str:
    """The mean floor over the layer's tasks whose floor is known, or `—`."""
    floors = [task.floor for task in layer.tasks.values() if task.floor is not None]
    return f"{sum(floors) / len(floors):.2f}" if floors else "—"


def floor_mean_text(floor: FloorSummary) -> str:
    """`0.33 over 3 tasks` (the mean over the tasks whose floor is known), or `unknown`."""
    if floor.value is None:
        return "unknown"
    return f"{floor.value:.2f} over {plural(floor.n_tasks, 'task')}"


def floor_lines(condition: ConditionSummary) -> list[str]:
    """Under the table: what doing nothing scores, which tasks it passes (marked), which floors
    are unknown, and the passes indistinguishable from doing nothing."""
    return [] if condition.floor is None else floor_summary_lines(condition.floor)


def floor_summary_lines(floor: FloorSummary) -> list[str]:
    line = (
        f"do-nothing floor: {floor_mean_text(floor)} (every seat on the null endpoint; "
        f"{FLOOR_MARK} a do-nothing agent passes the task"
    )
    line += f": {', '.join(floor.passing)})" if floor.passing else ": none)"
    lines = [line]
    if floor.unknown:
        lines.append(f"floor unknown (its trial did not score): {', '.join(floor.unknown)}")
    if floor.idle_passes:
        lines.append(idle_passes_text(floor.idle_passes))
    return lines


def idle_passes_text(count: int) -> str:
    return (
        f"{plural(count, 'pass', 'passes')} on tasks a do-nothing agent passes came from "
        "trials that never called a tool: indistinguishable from doing nothing"
    )
