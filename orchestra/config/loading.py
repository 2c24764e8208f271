"""Reading YAML, JSON and TOML config files into plain data, strictly.

Duplicate keys are errors in every format (YAML and JSON parsers would otherwise keep the
last value silently), and every failure is a one-line `ConfigError` naming the file.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import yaml

from orchestra.config.errors import ConfigError, display_path, dotted_field


def read_text(path: Path) -> str:
    shown = display_path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(shown, "", "file not found") from None
    except IsADirectoryError:
        raise ConfigError(shown, "", "is a directory, expected a file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(shown, "", f"not valid UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(shown, "", f"cannot be read ({exc.strerror})") from None


def load_yaml(path: Path) -> Any:
    """YAML 1.1 through the safe loader; a key repeated in one mapping is an error."""
    shown = display_path(path)
    text = read_text(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            return None
        _reject_duplicate_yaml_keys(shown, node, ())
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(shown, where, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(shown, "", f"invalid YAML: {exc}") from None


def _reject_duplicate_yaml_keys(shown: str, node: yaml.Node, path: tuple[str | int, ...]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            if key in seen:
                line = key_node.start_mark.line + 1
                raise ConfigError(shown, dotted_field((*path, key)), f"duplicate key (line {line})")
            seen.add(key)
            _reject_duplicate_yaml_keys(shown, value_node, (*path, key))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _reject_duplicate_yaml_keys(shown, item, (*path, index))


class _DuplicateJsonKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJsonKey(key)
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def load_json(path: Path) -> Any:
    """Standard JSON; duplicate keys and NaN/Infinity are errors."""
    shown = display_path(path)
    text = read_text(path)
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_reject_constant)
    except _DuplicateJsonKey as exc:
        raise ConfigError(shown, exc.key, "duplicate key") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            shown, f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise ConfigError(shown, "", f"invalid JSON: {exc}") from None


def load_yaml_or_json(path: Path) -> Any:
    """JSON for `*.json`, YAML otherwise (both share one schema downstream)."""
    return load_json(path) if path.suffix.lower() == ".json" else load_yaml(path)


def load_toml(path: Path) -> dict[str, Any]:
    shown = display_path(path)
    text = read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(shown, "", f"invalid TOML: {exc}") from None
