"""Serialising relay -> client frames."""

import json
from typing import Any

import orjson


def dumps(value: Any) -> str:
    """Compact JSON text. Client-supplied strings echoed back (subscription ids, event ids,
    message types) may hold lone surrogates, which orjson refuses; those are \\u-escaped."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
