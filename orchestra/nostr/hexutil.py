"""Exact lowercase-hex checks shared by events, filters and keys."""

import re
from typing import TypeGuard

_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")


def is_hex64(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def is_hex128(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _HEX128.fullmatch(value) is not None
