"""Secret hygiene: redact this trial's secrets from every text file it wrote (§7.15)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from orchestra.nostr.keys import Keys

REDACTED = b"[REDACTED]"


def secret_strings(keys: Iterable[Keys], api_keys: Iterable[str]) -> list[str]:
    """Hex and nsec forms of every secret key, plus API-key values; longest first."""
    values: set[str] = set()
    for key in keys:
        values.add(key.secret_hex)
        values.add(key.nsec)
    values.update(value for value in api_keys if value)
    return sorted(values, key=len, reverse=True)


def redact_tree(root: Path, secrets: list[str]) -> dict[str, object]:
    """Replace every occurrence in files under `root`; `{redactions, files}` for result.json.

    Works on bytes so that files of any encoding are scanned and left otherwise untouched.
    """
    needles = [s.encode("utf-8") for s in secrets]
    redactions = 0
    files: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        data = path.read_bytes()
        count = 0
        for needle in needles:
            hits = data.count(needle)
            if hits:
                data = data.replace(needle, REDACTED)
                count += hits
        if count:
            path.write_bytes(data)
            redactions += count
            files.append(path.relative_to(root).as_posix())
    return {"redactions": redactions, "files": files}
