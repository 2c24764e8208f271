"""Atomic JSON files and timestamps in the jobs-directory format (orchestrator.md §10.1)."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
_NON_ASCII = re.compile(r"[^\x00-\x7e]")  # DEL too, as json.dumps(ensure_ascii=True)


def utc_timestamp(moment: datetime | None = None) -> str:
    """ISO-8601 UTC with microseconds and `Z`, e.g. `2026-11-29T17:42:03.123456Z`."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dumps_pretty(value: Any, *, ensure_ascii: bool = False) -> str:
    """Sorted keys, 2-space indent, one trailing newline.

    orjson writes what `json.dumps(sort_keys=True, indent=2)` writes (floats aside: `1e-05`
    becomes `1e-5`) at a fraction of the cost: with `indent`, the standard library falls back to
    its pure-Python encoder, and the orchestrator rewrites results and evidence all trial long.
    """
    try:
        text = orjson.dumps(value, option=_PRETTY).decode()
    except TypeError:  # beyond orjson: integers over 64 bits, non-string keys, lone surrogates
        return (
            json.dumps(value, sort_keys=True, indent=2, ensure_ascii=ensure_ascii, allow_nan=False)
            + "\n"
        )
    return _NON_ASCII.sub(_escape_character, text) if ensure_ascii else text


def _escape_character(match: re.Match[str]) -> str:
    """`\\uXXXX` escapes as `json.dumps(ensure_ascii=True)` writes them (UTF-16 units)."""
    units = match.group().encode("utf-16-be")
    return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))


def write_text_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write `<name>.tmp-<pid>` beside the target, fsync, then rename over it.

    A reader never sees a half-written file, and a crash leaves the previous version intact.
    The directory is created only when missing: results are rewritten at every phase.
    """
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, flags, 0o600)
    try:
        try:
            os.fchmod(fd, 0o644 if mode is None else mode)  # whatever the umask
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise naming(error, path) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def naming(error: OSError, path: Path) -> OSError:
    """`error` with the file it concerns (`os.write` on a full disk names none), so the one
    line a run ends with says where."""
    if error.filename is not None:
        return error
    return type(error)(error.errno, error.strerror, str(path))


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
