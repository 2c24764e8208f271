"""Endpoint configs (orchestrator.md §4) and their cross-checks with a manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestra.config.condition import condition_problems, load_condition
from orchestra.config.endpoints import (
    TRIAL_IDENTITY_VARIABLES,
    load_endpoint_config,
    resolve_api_key,
)
from orchestra.config.errors import ConfigError

from .conftest import LUNA_MANIFEST, REPO


def write_config(tmp_path: Path, data: Any, name: str = "ep.json") -> Path:
    path = tmp_path / "endpoints" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_endpoint_config(path)
    lines = [str(err) for err in caught.value.errors]
    for line in lines:
        assert "\n" not in line and line.startswith(f"{path}: ")
    return [line.removeprefix(f"{path}: ") for line in lines]


OPENAI = {"provider": "openai", "api_key_env": "OPENAI_COMPAT_API_KEY", "env": {}}


def test_repository_endpoint_configs_load() -> None:
    openai = load_endpoint_config(REPO / "endpoints/openai-live.json")
    assert list(openai.endpoints) == ["gpt-5.6-luna", "gpt-5.6-sol", "gpt-5.6-terra"]
    anthropic = load_endpoint_config(REPO / "endpoints/anthropic-live.json")
    assert anthropic["claude-sonnet-4-6"].api_key_env == "ANTHROPIC_API_KEY"
    oracle = load_endpoint_config(REPO / "endpoints/oracle.json")
    assert oracle["oracle"].is_oracle and oracle["oracle"].api_key_env is None
    assert oracle.oracle_endpoint_names() == ["oracle"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"x": dict(OPENAI, served_model="y")}, ["x.served_model: unknown key"]),
        (
            {"x": {"provider": "oracle", "model": "y"}},
            ['x.model: not allowed for provider "oracle" (the oracle serves the endpoint name)'],
        ),
        (
            {"x": {"provider": "openai", "base_url": "http://10.0.0.5:8000/v1"}},
            [
                'x.api_key_env: required for provider "openai" (optional only for a base_url '
                "on this machine: 127.0.0.1, localhost, ::1)"
            ],
        ),
        (
            {"x": dict(OPENAI, provider="azure")},
            [
                "x.provider: input should be 'openai', 'anthropic', 'openrouter', 'databricks', "
                "'databricks_v2' or 'oracle' (got \"azure\")"
            ],
        ),
        ({"x": {"provider": "openai"}}, ['x.api_key_env: required for provider "openai"']),
        (
            {"x": {"provider": "oracle", "api_key_env": "K"}},
            ['x.api_key_env: not allowed for provider "oracle" (the oracle needs no key)'],
        ),
        (
            {"x": dict(OPENAI, api_key_env="lower")},
            ["x.api_key_env: string should match pattern '^[A-Z][A-Z0-9_]*$' (got \"lower\")"],
        ),
        ({"x": dict(OPENAI, env={"A": 1})}, ["x.env.A: input should be a valid string (got 1)"]),
        (
            {
                "x": {
                    "provider": "anthropic",
                    "api_key_env": "ANTHROPIC_API_KEY",
                    "base_url": "http://h/v1",
                }
            },
            ['x.base_url: only allowed with provider "openai"'],
        ),
        (
            {"x": dict(OPENAI, base_url="ftp://h")},
            ['x.base_url: must be an http:// or https:// URL (got "ftp://h")'],
        ),
        (
            {
                "x": dict(
                    OPENAI, base_url="http://127.0.0.1:8091/v1", env={"OPENAI_COMPAT_BASE_URL": "u"}
                )
            },
            ["x.env.OPENAI_COMPAT_BASE_URL: conflicts with base_url; set only one of them"],
        ),
        (
            {"x": dict(OPENAI, env={"BAD-NAME": "v"})},
            ["x.env.BAD-NAME: not a valid environment variable name"],
        ),
        ({"bad name": OPENAI}, ['"bad name": endpoint names must be non-empty, no spaces']),
        ({"x": "openai"}, ['x: expected a mapping (got "openai")']),
        ([OPENAI], ["expected a JSON object of endpoints, got a list"]),
        ({}, ["defines no endpoints"]),
        ('{"x": {}, "x": {}}', ["x: duplicate key"]),
        ('{"x": ', ["line 1, column 7: invalid JSON: Expecting value"]),
        ('{"x": NaN}', ["invalid JSON: NaN is not valid JSON"]),
    ],
)
def test_schema_errors(tmp_path: Path, data: Any, expected: list[str]) -> None:
    assert problems(write_config(tmp_path, data)) == expected


def test_all_problems_of_all_endpoints_are_reported(tmp_path: Path) -> None:
    data = {"a": {"provider": "openai"}, "b": dict(OPENAI, extra=1), "ok": OPENAI}
    assert problems(write_config(tmp_path, data)) == [
        'a.api_key_env: required for provider "openai"',
        "b.extra: unknown key",
    ]


@pytest.mark.parametrize("name", sorted(TRIAL_IDENTITY_VARIABLES))
def test_every_orchestrator_variable_is_forbidden(tmp_path: Path, name: str) -> None:
    data = {"x": dict(OPENAI, env={name: "v", "DATABRICKS_HOST": "ok"})}
    assert problems(write_config(tmp_path, data)) == [
        f"x.env: endpoint env cannot override trial identity: ['{name}']"
    ]


@pytest.mark.parametrize(
    ("endpoint", "keys", "forbidden"),
    [
        # the endpoint's own key variable and the provider variable it feeds
        (
            {"provider": "openai", "api_key_env": "MY_KEY"},
            ["MY_KEY", "OPENAI_COMPAT_API_KEY"],
            ["MY_KEY", "OPENAI_COMPAT_API_KEY"],
        ),
        (
            {"provider": "anthropic", "api_key_env": "ANTHROPIC_API_KEY"},
            ["ANTHROPIC_API_KEY", "OPENAI_COMPAT_API_KEY"],
            ["ANTHROPIC_API_KEY"],
        ),
        (
            {"provider": "openrouter", "api_key_env": "K"},
            ["OPENROUTER_API_KEY"],
            ["OPENROUTER_API_KEY"],
        ),
        # the oracle owns the OpenAI-compatible client settings
        (
            {"provider": "oracle"},
            ["OPENAI_COMPAT_BASE_URL", "OPENAI_COMPAT_API", "OPENAI_COMPAT_API_KEY", "OTHER"],
            ["OPENAI_COMPAT_API", "OPENAI_COMPAT_API_KEY", "OPENAI_COMPAT_BASE_URL"],
        ),
    ],
)
def test_endpoint_specific_forbidden_keys(
    tmp_path: Path, endpoint: dict, keys: list[str], forbidden: list[str]
) -> None:
    data = {"x": dict(endpoint, env=dict.fromkeys(keys, "v"))}
    assert problems(write_config(tmp_path, data)) == [
        f"x.env: endpoint env cannot override trial identity: {forbidden}"
    ]


def test_openai_compat_api_is_allowed_for_a_local_server(tmp_path: Path) -> None:
    data = {
        "local/qwen3-8b": dict(
            OPENAI, base_url="http://127.0.0.1:8091/v1", env={"OPENAI_COMPAT_API": "chat"}
        )
    }
    endpoint = load_endpoint_config(write_config(tmp_path, data))["local/qwen3-8b"]
    assert (
        endpoint.base_url_seen_from("host.docker.internal") == "http://host.docker.internal:8091/v1"
    )
    assert endpoint.base_url_seen_from(None) == "http://127.0.0.1:8091/v1"  # local env
    assert endpoint.summary() == {
        "provider": "openai",
        "api_key_env": "OPENAI_COMPAT_API_KEY",
        "base_url": "http://127.0.0.1:8091/v1",
        "env_keys": ["OPENAI_COMPAT_API"],
    }
    assert endpoint.fingerprint()["env"] == [["OPENAI_COMPAT_API", "chat"]]


def test_remote_base_url_is_not_rewritten(tmp_path: Path) -> None:
    data = {"x": dict(OPENAI, base_url="https://api.example.com/v1")}
    endpoint = load_endpoint_config(write_config(tmp_path, data))["x"]
    assert endpoint.base_url_seen_from("host.docker.internal") == "https://api.example.com/v1"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"ORACLE_FAULTS": "503:1"}, 'oracle.env.ORACLE_FAULTS: unknown fault kind "503"'),
        (
            {"ORACLE_FAULTS": "slow"},
            'oracle.env.ORACLE_FAULTS: malformed item "slow" (expected <kind>:<N>)',
        ),
        (
            {"ORACLE_SLOW_SECONDS": "0"},
            'oracle.env.ORACLE_SLOW_SECONDS: must be a number > 0, got "0"',
        ),
        ({"ORACLE_COLOUR": "red"}, "oracle.env.ORACLE_COLOUR: unknown oracle setting"),
    ],
)
def test_oracle_settings_are_validated(tmp_path: Path, env: dict, expected: str) -> None:
    path = write_config(tmp_path, {"oracle": {"provider": "oracle", "env": env}}, "oracle.json")
    assert problems(path) == [expected]


def test_oracle_settings_are_not_agent_env(tmp_path: Path) -> None:
    env = {"ORACLE_FAULTS": "429:1,slow:2", "ORACLE_SLOW_SECONDS": "0.5", "EXTRA": "1"}
    path = write_config(tmp_path, {"oracle": {"provider": "oracle", "env": env}})
    endpoint = load_endpoint_config(path)["oracle"]
    assert endpoint.agent_env_items() == {"EXTRA": "1"}
    assert endpoint.oracle_settings() == {
        "ORACLE_FAULTS": "429:1,slow:2",
        "ORACLE_SLOW_SECONDS": "0.5",
    }


def test_api_key_fallback() -> None:
    assert resolve_api_key("OPENAI_COMPAT_API_KEY", {"OPENAI_API_KEY": "sk"}) == "sk"
    assert (
        resolve_api_key(
            "OPENAI_COMPAT_API_KEY", {"OPENAI_COMPAT_API_KEY": "a", "OPENAI_API_KEY": "b"}
        )
        == "a"
    )
    assert resolve_api_key("OPENAI_COMPAT_API_KEY", {"OPENAI_COMPAT_API_KEY": ""}) is None
    assert resolve_api_key("ANTHROPIC_API_KEY", {"OPENAI_API_KEY": "sk"}) is None


# --- manifest × endpoint config ----------------------------------------------------------------


def test_repository_conditions_load_with_their_endpoint_configs() -> None:
    pairs = {"luna": "openai-live", "sonnet": "anthropic-live", "oracle": "oracle"}
    for manifest, config in pairs.items():
        condition = load_condition(
            REPO / f"manifests/buzz-native-solo-{manifest}.yaml", REPO / f"endpoints/{config}.json"
        )
        assert condition.is_oracle == (manifest == "oracle")


def test_missing_endpoint_suggests_the_config_that_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError) as caught:
        load_condition(
            Path("manifests/buzz-native-solo-luna.yaml"), Path("endpoints/anthropic-live.json")
        )
    assert str(caught.value) == (
        'endpoint "gpt-5.6-luna" is not in endpoints/anthropic-live.json '
        "(try --endpoint-config endpoints/openai-live.json)"
    )


def test_missing_endpoint_without_a_suggestion(tmp_path: Path) -> None:
    manifest = tmp_path / "manifests/m.yaml"
    manifest.parent.mkdir()
    manifest.write_text(LUNA_MANIFEST)
    config = write_config(tmp_path, {"other": OPENAI})
    write_config(tmp_path, "not json", "broken.json")  # an unreadable neighbour is skipped
    condition = load_condition(manifest, config, REPO, verify=False)
    assert [str(e) for e in condition_problems(condition)] == [
        f'endpoint "gpt-5.6-luna" is not in {config}'
    ]


def test_an_invalid_neighbour_defining_the_endpoint_is_never_suggested(tmp_path: Path) -> None:
    manifest = tmp_path / "manifests/m.yaml"
    manifest.parent.mkdir()
    manifest.write_text(LUNA_MANIFEST)
    config = write_config(tmp_path, {"other": OPENAI})
    broken = {**OPENAI, "provider": "nonsense"}
    write_config(tmp_path, {"gpt-5.6-luna": broken}, "a-broken.json")  # sorts first
    write_config(tmp_path, {"gpt-5.6-luna": OPENAI}, "b-good.json")
    condition = load_condition(manifest, config, REPO, verify=False)
    [problem] = [str(e) for e in condition_problems(condition)]
    assert problem.endswith(f"(try --endpoint-config {tmp_path / 'endpoints' / 'b-good.json'})"), (
        problem
    )


def test_unsupported_harness_provider_and_extra_clash(tmp_path: Path) -> None:
    text = LUNA_MANIFEST.replace("    count: 1\n", "    count: 1\n    harness: goose\n").replace(
        "      thinking_effort: medium\n",
        "      thinking_effort: medium\n      extra:\n        DB_KEY: x\n",
    )
    manifest = tmp_path / "manifests/m.yaml"
    manifest.parent.mkdir()
    manifest.write_text(text)
    config = write_config(
        tmp_path, {"gpt-5.6-luna": {"provider": "databricks", "api_key_env": "DB_KEY"}}
    )
    with pytest.raises(ConfigError) as caught:
        load_condition(manifest, config, REPO)
    assert [str(e) for e in caught.value.errors] == [
        f'{manifest}: roster[0].harness: harness "goose" is not supported',
        f'{config}: gpt-5.6-luna.provider: provider "databricks" is not supported by buzz-agent',
        f"{manifest}: roster[0].generation.extra: endpoint env cannot override trial identity: ['DB_KEY']",
    ]


def test_manifest_and_config_errors_are_reported_together(tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("condition: x\n")
    config = write_config(tmp_path, {"x": {"provider": "openai"}})
    with pytest.raises(ConfigError) as caught:
        load_condition(manifest, config)
    assert [str(e) for e in caught.value.errors] == [
        f"{manifest}: roster: required key is missing",
        f"{manifest}: prices: required key is missing",
        f"{manifest}: trial_budget: required key is missing",
        f'{config}: x.api_key_env: required for provider "openai"',
    ]


def test_an_own_model_names_its_id_and_needs_no_key_on_this_machine(tmp_path: Path) -> None:
    config = load_endpoint_config(
        write_config(
            tmp_path,
            {
                "qwen": {
                    "provider": "openai",
                    "base_url": "http://127.0.0.1:8000/v1",
                    "model": "Qwen/Qwen3-8B",
                },
                "gpt-x": OPENAI,
            },
        )
    )
    qwen, plain = config["qwen"], config["gpt-x"]
    assert qwen.model_id("qwen") == "Qwen/Qwen3-8B" and plain.model_id("gpt-x") == "gpt-x"
    assert qwen.api_key_env is None
    assert qwen.fingerprint()["model"] == "Qwen/Qwen3-8B"
    # An unset model leaves the fingerprint (and so every recorded replay identity) as it was.
    assert "model" not in plain.fingerprint()
