"""Importing the ACP SDK without reading its field docstrings from source.

`acp.schema` declares its ~280 pydantic models with `use_attribute_docstrings`, so at import
pydantic finds each class's source (on Python < 3.13 by walking the import's frames) and parses
it again to attach every field's docstring as its JSON-schema `description`: about 0.25 s of
CPU of the SDK's 0.6 s, in buzz-acp and buzz-agent at every trial. Descriptions take no part in
validation or serialization and nothing here asks an ACP model for its JSON schema, so both
programs import the SDK with that step skipped. `tests/agents/test_sdk_imports.py` checks that
every ACP model's JSON schema comes out the same apart from the descriptions, and that the
pydantic hook still exists (an upgrade that renames it fails there instead of silently costing
the CPU again).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: The function of `pydantic._internal._fields` that reads attribute docstrings (2.12-2.14).
DOCSTRING_HOOK = "_update_fields_from_docstrings"


def _no_docstrings(*_args: Any, **_kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def field_docstrings_skipped() -> Iterator[None]:
    """Models defined inside get no docstring descriptions (a no-op if pydantic moved it)."""
    from pydantic._internal import _fields

    original = getattr(_fields, DOCSTRING_HOOK, None)
    if original is None:
        yield
        return
    setattr(_fields, DOCSTRING_HOOK, _no_docstrings)
    try:
        yield
    finally:
        setattr(_fields, DOCSTRING_HOOK, original)
