"""`read_file` and `str_replace` (§3.2). Errors are raised as `FileToolError` with the text the
model should see."""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path

DEFAULT_LIMIT = 2000
MAX_LIMIT = 10_000
MAX_LINE_CHARS = 2000
MAX_OUTPUT_BYTES = 50 * 1024
MAX_DIFF_BYTES = 8 * 1024
_BINARY_PROBE_BYTES = 8192
_DIRECTORY_LISTING_MAX = 50


class FileToolError(Exception):
    """A failure shown to the model as an error result."""


def resolve_path(raw: str, cwd: Path) -> Path:
    """Absolute, `~`-prefixed (expanded with HOME) or relative to the cwd; no workspace jail."""
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else cwd / path


def _read_text(path: Path, shown: str) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileToolError(f"file not found: {shown}") from None
    except IsADirectoryError:
        raise FileToolError(_directory_message(path, shown)) from None
    except PermissionError:
        raise FileToolError(f"permission denied: {shown}") from None
    except OSError as exc:
        raise FileToolError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if b"\0" in data[:_BINARY_PROBE_BYTES]:
        raise FileToolError(f"{shown} looks like a binary file (NUL byte); not shown")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileToolError(f"{shown} is not valid UTF-8 (byte offset {exc.start})") from None


def _directory_message(path: Path, shown: str) -> str:
    try:
        entries = sorted(e.name + ("/" if e.is_dir() else "") for e in path.iterdir())
    except OSError:
        entries = []
    listing = ", ".join(entries[:_DIRECTORY_LISTING_MAX])
    more = (
        f" (and {len(entries) - _DIRECTORY_LISTING_MAX} more)"
        if len(entries) > _DIRECTORY_LISTING_MAX
        else ""
    )
    return f"{shown} is a directory; entries: {listing or '(none)'}{more}"


def _split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_file(raw_path: str, offset: int, limit: int, cwd: Path) -> str:
    if offset < 1:
        raise FileToolError(f"offset must be at least 1, got {offset}")
    if not 1 <= limit <= MAX_LIMIT:
        raise FileToolError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    lines = _split_lines(_read_text(resolve_path(raw_path, cwd), raw_path))
    total = len(lines)
    if total == 0:
        return "[empty file]"
    if offset > total:
        return f"[offset {offset} is past the end of the file ({total} lines)]"
    rendered: list[str] = []
    size = 0
    last = offset - 1
    for number in range(offset, min(total, offset + limit - 1) + 1):
        content = lines[number - 1].removesuffix("\r")
        if len(content) > MAX_LINE_CHARS:
            content = content[:MAX_LINE_CHARS] + "… [line truncated]"
        line = f"{number}:{content}"
        size += len(line.encode("utf-8")) + 1
        if size > MAX_OUTPUT_BYTES and rendered:
            break
        rendered.append(line)
        last = number
    if last < total:
        rendered.append(f"[showing lines {offset}-{last} of {total}; use offset to read more]")
    return "\n".join(rendered)


def _atomic_write(path: Path, content: str, mode: int | None) -> None:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8"))
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _diff(before: str, after: str, shown: str) -> str:
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{shown}",
            tofile=f"b/{shown}",
            n=3,
        )
    )
    encoded = diff.encode("utf-8")
    if len(encoded) > MAX_DIFF_BYTES:
        cut = encoded[:MAX_DIFF_BYTES].decode("utf-8", errors="ignore")
        return f"{cut}\n[diff truncated at {MAX_DIFF_BYTES} bytes]"
    return diff or "(no changes)"


def str_replace(raw_path: str, old_str: str, new_str: str, replace_all: bool, cwd: Path) -> str:
    path = resolve_path(raw_path, cwd)
    if old_str == "":
        if path.exists():
            raise FileToolError(
                f"old_str is empty but {raw_path} exists; give the exact text to replace"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, new_str, mode=None)
        except OSError as exc:
            raise FileToolError(f"cannot create {raw_path}: {exc.strerror or exc}") from None
        return f"created {raw_path}\n{_diff('', new_str, raw_path)}"
    before = _read_text(path, raw_path)
    count = before.count(old_str)
    if count == 0:
        raise FileToolError(f"old_str not found in {raw_path}")
    if count > 1 and not replace_all:
        raise FileToolError(
            f"old_str matches {count} times in {raw_path}; include more context or set replace_all"
        )
    after = before.replace(old_str, new_str) if replace_all else before.replace(old_str, new_str, 1)
    try:
        _atomic_write(path, after, mode=path.stat().st_mode & 0o7777)
    except OSError as exc:
        raise FileToolError(f"cannot write {raw_path}: {exc.strerror or exc}") from None
    return _diff(before, after, raw_path)
