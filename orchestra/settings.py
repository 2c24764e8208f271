"""One reader for the settings programs take from environment variables.

A `Setting` is declared once: its variable (and legacy aliases), the raw default, how the raw
text is tidied, whether an empty value counts as unset, and the parser that turns the text
into a value. Parsers raise `InvalidValue(problem)`; the reader reports it as a `SettingError`
whose message is `<VARIABLE>: <problem>`, the one format of every program's configuration
errors, each naming the variable and, unless it is a secret, the value.

The parsers here phrase their problems as agent-harness.md's programs always have; a setting
whose document words a problem otherwise brings its own parser.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

from orchestra.errors import OrchestraError

T = TypeVar("T")
Word = TypeVar("Word", bound=str)
MAX_TEXT_FILE_BYTES = 1024 * 1024
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


class InvalidValue(ValueError):
    """Raised by a parser: what is wrong with the value, phrased to follow `<VARIABLE>: `."""


class SettingError(OrchestraError, ValueError):
    """A setting that cannot be used; `str()` is one line naming the variable.

    `variable` is None for a problem of several settings together, whose message names them.
    """

    def __init__(self, variable: str | None, problem: str, *, joiner: str = ": ") -> None:
        self.variable = variable
        self.problem = problem
        super().__init__(problem if variable is None else f"{variable}{joiner}{problem}")


def strip(text: str) -> str:
    return text.strip()


def fold(text: str) -> str:
    """Stripped and lowercased: for words matched case-insensitively."""
    return text.strip().lower()


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable: where its text comes from and how it becomes a value."""

    variable: str
    parse: Callable[[str], T]
    #: The raw text used when the variable is unset (parsed like a given value); None: no value.
    default: str | None = None
    help: str = ""
    #: Older names, read when the variable itself is unset.
    aliases: tuple[str, ...] = ()
    #: Applied to the text first, so errors show the tidied text (e.g. `strip`, `fold`).
    tidy: Callable[[str], str] | None = None
    #: An empty (tidied) value counts as unset: the next alias, then the default, applies.
    empty_is_unset: bool = False
    #: The problem `value()` reports when the setting is unset and has no default.
    required: str = "not set"
    #: What its errors are raised as: a program's own subclass carries its exit code.
    error: type[SettingError] = SettingError

    def text(self, environ: Mapping[str, str]) -> str | None:
        """The tidied text of the first of the variable and its aliases that is set."""
        for name in (self.variable, *self.aliases):
            raw = environ.get(name)
            if raw is None:
                continue
            text = self.tidy(raw) if self.tidy is not None else raw
            if text == "" and self.empty_is_unset:
                continue
            return text
        return None

    def get(self, environ: Mapping[str, str]) -> T | None:
        """The value; the parsed default when unset; None when unset without a default."""
        text = self.text(environ)
        if text is None:
            text = self.default
        return None if text is None else self.parse_text(text)

    def value(self, environ: Mapping[str, str]) -> T:
        """The value of a setting that must have one (`required` names the problem if not)."""
        value = self.get(environ)
        if value is None:
            raise self.error(self.variable, self.required)
        return value

    def parse_text(self, text: str, source: str | None = None) -> T:
        """Parse text given for this setting; `source` is the flag it came from, if any."""
        try:
            return self.parse(text)
        except InvalidValue as problem:
            raise self.error(source or self.variable, str(problem)) from None


def present(
    environ: Mapping[str, str], names: Iterable[str], prefixes: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """The `names` that are set, in their order, then the set variables with one of `prefixes`
    (for the "accepted and ignored" lines every program logs)."""
    named = tuple(name for name in names if name in environ)
    if not prefixes:
        return named
    return named + tuple(
        sorted(name for name in environ if name.startswith(prefixes) and name not in named)
    )


# --- parsers -------------------------------------------------------------------------------


def text(value: str) -> str:
    return value


def integer(
    low: int | None = None, high: int | None = None, *, show_as_written: bool = False
) -> Callable[[str], int]:
    """Whole numbers within the bounds; a value out of bounds is shown as the number, or as it
    was written (quoted) with `show_as_written`."""
    if low is not None and high is not None:
        bounds = f"between {low} and {high}"
    else:
        bounds = f"at least {low}" if low is not None else f"at most {high}"

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise InvalidValue(f"expected an integer, got {value!r}") from None
        if (low is not None and number < low) or (high is not None and number > high):
            shown = repr(value) if show_as_written else str(number)
            raise InvalidValue(f"must be {bounds}, got {shown}")
        return number

    return parse


def positive_number(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise InvalidValue(f"expected a number, got {value!r}") from None
    if not number > 0:  # NaN too
        raise InvalidValue(f"must be positive, got {value!r}")
    return number


def boolean(value: str) -> bool:
    """agent-harness.md §0.3: 1/0, true/false, yes/no, on/off, any case."""
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise InvalidValue(f"expected a boolean (1/0, true/false, yes/no, on/off), got {value!r}")


def choice(
    *allowed: Word, listing: Literal["one of", "or"] = "one of", any_case: bool = False
) -> Callable[[str], Word]:
    """One of `allowed`, listed in errors as `one of a, b, c` or as `a, b or c`; `any_case`
    matches the stripped, lowercased value (and returns that). The parser's type is that of
    `allowed`, so a setting declared with a `Literal` of its words yields that `Literal`."""
    if listing == "or":
        expected = f"{', '.join(allowed[:-1])} or {allowed[-1]}"
    else:
        expected = f"one of {', '.join(allowed)}"

    def parse(value: str) -> Word:
        word = fold(value) if any_case else value
        for option in allowed:
            if option == word:
                return option
        raise InvalidValue(f"expected {expected}, got {value!r}")

    return parse


def comma_list(value: str) -> tuple[str, ...]:
    """`a, b,,c` → ("a", "b", "c"): items stripped, empty ones dropped."""
    return tuple(item.strip() for item in value.split(",") if item.strip())


def text_file(value: str) -> str:
    """The UTF-8 text of the file at `value`, at most 1 MiB (prompt files)."""
    try:
        data = Path(value).read_bytes()
    except OSError as error:
        raise InvalidValue(f"cannot read {value!r}: {error.strerror or error}") from None
    if len(data) > MAX_TEXT_FILE_BYTES:
        raise InvalidValue(f"{value!r} is larger than 1 MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidValue(f"{value!r} is not UTF-8") from None
