"""Secret hygiene: redact this trial's secrets from every text file it wrote (§7.15)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from orchestra.documents.trial import SecretScan
from orchestra.nostr.keys import Keys

REDACTED = b"[REDACTED]"


def secret_strings(keys: Iterable[Keys], api_keys: Iterable[str]) -> list[str]:
    """Hex and nsec forms of every secret key, plus API-key values as written and as they
    appear inside a JSON string; longest first, so that an escaped form is replaced whole and
    a JSON file stays valid (the replacement needs no escaping)."""
    values: set[str] = set()
    for key in keys:
        values.add(key.secret_hex)
        values.add(key.nsec)
    for value in api_keys:
        if value:
            values.add(value)
            values.update(
                json.dumps(value, ensure_ascii=escaped)[1:-1] for escaped in (False, True)
            )
    return sorted(values, key=len, reverse=True)


def redact_tree(root: Path, secrets: list[str]) -> SecretScan:
    """Replace every occurrence in files under `root`; what was replaced, for result.json.

    Works on bytes so that files of any encoding are scanned and left otherwise untouched.
    """
    needles = [s.encode("utf-8") for s in secrets]
    redactions = 0
    files: list[str] = []
    for path in sorted(_regular_files(root)):
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
    return SecretScan(redactions=redactions, files=files)


def redact_text(text: str, secrets: list[str]) -> str:
    """`text` with every secret replaced (an error message may quote a provider's answer)."""
    for secret in secrets:
        text = text.replace(secret, REDACTED.decode())
    return text


def _regular_files(root: Path) -> Iterator[Path]:
    """Files under `root`, symlinks neither followed nor listed (`scandir`: no stat per entry)."""
    pending = [root]
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except FileNotFoundError:  # removed meanwhile: nothing left to scan there
            continue
        with entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path)
