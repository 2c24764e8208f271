"""Atomic JSON files and timestamps in the jobs-directory format (orchestrator.md §10.1)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def utc_timestamp(moment: datetime | None = None) -> str:
    """ISO-8601 UTC with microseconds and `Z`, e.g. `2026-11-29T17:42:03.123456Z`."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dumps_pretty(value: Any, *, ensure_ascii: bool = False) -> str:
    """Sorted keys, 2-space indent, one trailing newline."""
    return (
        json.dumps(value, sort_keys=True, indent=2, ensure_ascii=ensure_ascii, allow_nan=False)
        + "\n"
    )


def write_text_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write `<name>.tmp-<pid>` beside the target, fsync, then rename over it.

    A reader never sees a half-written file, and a crash leaves the previous version intact.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if mode is None else mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is None:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(
    path: Path, value: Any, *, ensure_ascii: bool = False, mode: int | None = None
) -> None:
    write_text_atomic(path, dumps_pretty(value, ensure_ascii=ensure_ascii), mode=mode)


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when it is missing, unreadable or not an object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None
