"""Counted nouns in messages: `1 task`, `2 tasks`, never `1 tasks` or `task(s)`."""

from __future__ import annotations


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`count` and the noun in the number it needs (`plural_form` for irregular nouns)."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"
