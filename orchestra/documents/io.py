"""Reading and writing the jobs-directory documents through their models (orchestrator.md §10.1).

Readers get a model or a one-line `DocumentError` naming the file and the field, never a
KeyError deep inside a report; writers dump the model in the §10.1 format (sorted keys,
2-space indent, atomic), so a document's bytes are what its model says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestra.config.errors import ConfigError, display_path, from_validation_error
from orchestra.jsonio import dumps_pretty, write_json_atomic

#: §10.1: ISO-8601 UTC with microseconds and `Z`, as `jsonio.utc_timestamp` writes it.
Timestamp = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def absent(value: object) -> bool:
    """`exclude_if` of an optional key that older documents lack: None is not written."""
    return value is None


def empty(value: object) -> bool:
    """`exclude_if` of a collection key added later: empty is not written, so a document
    with nothing to say there keeps the bytes it had before the key existed."""
    return not value


class DocumentError(ConfigError):
    """A document that is missing, unreadable or does not match its model (exit 1).

    `str()` is `<file>: <field>: <problem>` on one line, as for every configuration error.
    """


class Document(BaseModel):
    """A document the orchestrator writes: exactly these keys, nothing else (`extra="forbid"`)."""

    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> str:
        return dumps_pretty(self.model_dump(mode="json"))

    def write(self, path: Path) -> None:
        write_json_atomic(path, self.model_dump(mode="json"))

    @classmethod
    def load(cls, path: Path) -> Self:
        """The document in `path`; `DocumentError` when it is missing or malformed."""
        document = cls.load_if_readable(path)
        if document is None:
            raise DocumentError(display_path(path), "", "missing or not valid JSON")
        return document

    @classmethod
    def load_if_readable(cls, path: Path) -> Self | None:
        """None when `path` is missing or is not JSON at all (a writer that died before its
        first atomic rename); `DocumentError` when it is JSON that does not match the model."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise DocumentError(
                display_path(path), "", f"cannot read ({error.strerror or error})"
            ) from None
        try:
            return cls.model_validate_json(data)
        except ValidationError as error:
            if error.errors(include_url=False)[0]["type"] == "json_invalid":
                return None
            first = from_validation_error(display_path(path), error)[0]
            raise DocumentError(first.file, first.field, first.problem) from None
