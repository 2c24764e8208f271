"""Strict file loading: duplicate keys, syntax and I/O problems as one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestra.config.errors import ConfigError, ConfigErrors, show_value
from orchestra.config.loading import load_json, load_toml, load_yaml


def error_of(loader, path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        loader(path)
    assert len(caught.value.errors) == 1 and "\n" not in str(caught.value)
    return str(caught.value)


def test_nested_duplicate_yaml_key_names_its_path(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("a:\n  - b: 1\n    c: 2\n    b: 3\n")
    assert error_of(load_yaml, path) == f"{path}: a[0].b: duplicate key (line 4)"


def test_yaml_multiple_documents_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("a: 1\n---\nb: 2\n")
    assert "invalid YAML" in error_of(load_yaml, path)


def test_yaml_is_yaml_1_1(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("a: yes\nb: 1.0\n")
    assert load_yaml(path) == {"a": True, "b": 1.0}


def test_non_utf8_and_directory(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(b"a: \xff\n")
    assert error_of(load_yaml, path) == f"{path}: not valid UTF-8 (byte 3)"
    assert error_of(load_json, tmp_path) == f"{tmp_path}: is a directory, expected a file"


def test_toml_duplicate_keys_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text("a = 1\na = 2\n")
    assert error_of(load_toml, path).startswith(f"{path}: invalid TOML: Cannot overwrite a value")


def test_error_group_flattens_and_joins_lines() -> None:
    one, two = ConfigError("f", "a", "bad"), ConfigError("g", "", "worse")
    group = ConfigErrors([one, ConfigErrors([two])])
    assert group.errors == (one, two)
    assert str(group) == "f: a: bad\ng: worse"


def test_values_are_shown_on_one_short_line() -> None:
    assert show_value("a\nb") == '"a\\nb"'
    assert len(show_value("x" * 500)) == 100
