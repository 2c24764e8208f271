"""`orchestra.settings`: how a declared setting reads its variable, and the shared parsers' words
(the programs' own tables are covered with their programs, e.g. tests/agents/acp/test_acp_units.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestra import settings
from orchestra.errors import OrchestraError
from orchestra.settings import InvalidValue, Setting, SettingError


def problem(parse, value: str) -> str:
    with pytest.raises(InvalidValue) as raised:
        parse(value)
    return str(raised.value)


def error(setting: Setting, environ: dict[str, str]) -> SettingError:
    with pytest.raises(SettingError) as raised:
        setting.value(environ)
    return raised.value


def test_the_variable_then_its_aliases_then_the_parsed_default() -> None:
    setting = Setting("NEW", settings.integer(0, 9), "3", aliases=("OLD",))
    assert setting.value({}) == 3
    assert setting.value({"OLD": "4"}) == 4
    assert setting.value({"OLD": "4", "NEW": "5"}) == 5
    # An empty value is a value unless the setting says otherwise ...
    assert str(error(setting, {"NEW": "", "OLD": "4"})) == "NEW: expected an integer, got ''"
    # ... and then the next alias, then the default, applies.
    blank_unset = Setting("NEW", settings.integer(0, 9), "3", aliases=("OLD",), empty_is_unset=True)
    assert blank_unset.value({"NEW": "", "OLD": "4"}) == 4
    assert blank_unset.value({"NEW": ""}) == 3


def test_tidying_comes_first_and_shows_in_errors() -> None:
    folded = Setting(
        "LEVEL", settings.choice("debug", "info"), "info", tidy=settings.fold, empty_is_unset=True
    )
    assert folded.value({"LEVEL": " DEBUG "}) == "debug"
    assert folded.value({"LEVEL": "   "}) == "info"
    assert str(error(folded, {"LEVEL": " Loud "})) == (
        "LEVEL: expected one of debug, info, got 'loud'"
    )
    as_written = Setting("LEVEL", settings.choice("debug", "info", any_case=True), "info")
    assert as_written.value({"LEVEL": " DEBUG "}) == "debug"
    assert str(error(as_written, {"LEVEL": " Loud "})) == (
        "LEVEL: expected one of debug, info, got ' Loud '"
    )
    assert Setting("NAME", settings.text, tidy=settings.strip).get({"NAME": "  x "}) == "x"


def test_unset_without_a_default() -> None:
    optional = Setting("OWNER", settings.text)
    assert optional.get({}) is None and optional.text({}) is None
    assert str(error(optional, {})) == "OWNER: not set"
    required = Setting("KEY", settings.text, required="required (hex or nsec)", empty_is_unset=True)
    assert str(error(required, {"KEY": ""})) == "KEY: required (hex or nsec)"


def test_a_program_raises_its_own_error_class_and_names_a_flag() -> None:
    class RelayConfigError(SettingError):
        exit_code = 2

    setting = Setting("BIND", settings.integer(1), "1", error=RelayConfigError)
    with pytest.raises(RelayConfigError) as raised:
        setting.value({"BIND": "x"})
    assert raised.value.exit_code == 2
    assert (raised.value.variable, raised.value.problem) == (
        "BIND",
        "expected an integer, got 'x'",
    )
    with pytest.raises(RelayConfigError, match=r"^--bind: expected an integer, got 'y'$"):
        setting.parse_text("y", source="--bind")


def test_setting_errors_are_orchestra_errors_ending_with_exit_1() -> None:
    err = SettingError("A", "(3) must be less than B (2)", joiner=" ")
    assert str(err) == "A (3) must be less than B (2)"
    assert str(SettingError(None, "A and B are both set")) == "A and B are both set"
    assert isinstance(err, OrchestraError) and isinstance(err, ValueError)
    assert err.exit_code == 1


def test_integer_bounds_and_how_a_value_is_shown() -> None:
    assert settings.integer(1, 32)(" 7 ") == 7
    assert problem(settings.integer(1, 32), "x ") == "expected an integer, got 'x '"
    assert problem(settings.integer(1, 32), "33") == "must be between 1 and 32, got 33"
    assert problem(settings.integer(1024), "7") == "must be at least 1024, got 7"
    assert problem(settings.integer(high=5), "7") == "must be at most 5, got 7"
    assert problem(settings.integer(1, show_as_written=True), "0") == "must be at least 1, got '0'"


def test_booleans_take_the_harness_words_in_any_case() -> None:
    for word in ("1", "true", "YES", " On "):
        assert settings.boolean(word) is True
    for word in ("0", "False", "no", "OFF"):
        assert settings.boolean(word) is False
    assert problem(settings.boolean, " Maybe") == (
        "expected a boolean (1/0, true/false, yes/no, on/off), got ' Maybe'"
    )


def test_choices_are_listed_as_their_document_lists_them() -> None:
    assert problem(settings.choice("mentions", "all", listing="or"), "x") == (
        "expected mentions or all, got 'x'"
    )
    assert (
        problem(settings.choice("a", "b", "c", listing="or"), "x") == "expected a, b or c, got 'x'"
    )
    assert problem(settings.choice("a", "b", "c"), "x") == "expected one of a, b, c, got 'x'"
    assert problem(settings.choice("info"), "INFO") == "expected one of info, got 'INFO'"


def test_lists_numbers_and_presence() -> None:
    assert settings.comma_list(" a, b,, c ,") == ("a", "b", "c")
    assert settings.comma_list("") == ()
    assert settings.positive_number("2.5") == 2.5
    assert problem(settings.positive_number, "soon") == "expected a number, got 'soon'"
    assert problem(settings.positive_number, "0") == "must be positive, got '0'"
    assert problem(settings.positive_number, "nan") == "must be positive, got 'nan'"
    environ = {"B": "", "A": "1", "S3_Y": "", "S3_X": "", "OTHER": ""}
    assert settings.present(environ, ("A", "B", "C")) == ("A", "B")
    assert settings.present(environ, ("B",), ("S3_",)) == ("B", "S3_X", "S3_Y")


def test_text_files_are_utf8_and_at_most_one_mib(tmp_path: Path) -> None:
    good = tmp_path / "prompt.md"
    good.write_text("be brief ✓\n", encoding="utf-8")
    assert settings.text_file(str(good)) == "be brief ✓\n"
    assert problem(settings.text_file, str(tmp_path / "missing")) == (
        f"cannot read {str(tmp_path / 'missing')!r}: No such file or directory"
    )
    assert (
        problem(settings.text_file, str(tmp_path))
        == f"cannot read {str(tmp_path)!r}: Is a directory"
    )
    large = tmp_path / "large.md"
    large.write_bytes(b"x" * (1024 * 1024 + 1))
    assert problem(settings.text_file, str(large)) == f"{str(large)!r} is larger than 1 MiB"
    latin1 = tmp_path / "latin1.md"
    latin1.write_bytes("café".encode("latin-1"))
    assert problem(settings.text_file, str(latin1)) == f"{str(latin1)!r} is not UTF-8"
