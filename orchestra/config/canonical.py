"""Canonical JSON and SHA-256 helpers (orchestrator.md §3.5, reused by §2.5)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Keys sorted at every level, `,`/`:` separators, non-ASCII literal, NaN/inf rejected."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def canonical_sha256(value: Any) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of `canonical_json(value)`."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
