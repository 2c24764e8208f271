"""Condition manifests (orchestrator.md §3): schema, cross-field rules, hash vectors, artifacts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from orchestra.config.canonical import canonical_json
from orchestra.config.errors import ConfigError
from orchestra.config.manifest import (
    ArtifactHashMismatch,
    default_artifact_root,
    load_manifest,
    read_artifact,
    verify_artifacts,
)

from .conftest import LUNA_MANIFEST, PERSONA_SHA256, REPO

LUNA_CANONICAL = (
    '{"condition":"buzz-native-solo-luna","environment":{"override_cpus":null,'
    '"override_memory_mb":null,"override_storage_mb":null},"metadata":{"suite":"buzz-native"},'
    '"prices":{"gpt-5.6-luna":{"cache_read_rate":0.0,"cached_input_per_million_usd":0.02,'
    '"input_per_million_usd":0.2,"output_per_million_usd":1.2}},"roster":[{"budget":'
    '{"max_calls":null,"max_cost_usd":null,"max_input_tokens":null,"max_output_tokens":null},'
    '"concurrency":1,"count":1,"endpoint":"gpt-5.6-luna","generation":{"compact_at_percent":null,'
    '"compact_at_tokens":null,"context_window_tokens":200000,"extra":{},"max_output_tokens":4096,'
    '"thinking_effort":"medium"},"harness":"buzz-agent","id":"solo","include_platform_prompt":true,'
    '"kind":"orchestrator","model_revision":"gpt-5.6-luna","persona":null,"prompt":{"path":'
    '"manifests/personas/buzz-native-solo.md","sha256":'
    '"29035c227f093a4b59dfd89a4d5bbf5efd950f8e7be78656cb3c83274aa819a5"},"role":"solo",'
    '"skills":[]}],"schema_version":"1","trial_budget":{"max_cost_usd":null,"timeout_seconds":300}}'
)


def luna_data() -> dict:
    return yaml.safe_load(LUNA_MANIFEST)


def write_manifest(tmp_path: Path, data: dict | str, name: str = "m.yaml") -> Path:
    path = tmp_path / "manifests" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_manifest(path)
    lines = [str(err) for err in caught.value.errors]
    assert str(caught.value) == "\n".join(lines)
    for line in lines:
        assert "\n" not in line and line.startswith(f"{path}: ")
    return [line.removeprefix(f"{path}: ") for line in lines]


def with_change(tmp_path: Path, change: Callable[[dict], None]) -> list[str]:
    data = luna_data()
    change(data)
    return problems(write_manifest(tmp_path, data))


# --- condition hash ---------------------------------------------------------------------------


def test_condition_hash_test_vector(tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path, LUNA_MANIFEST))
    assert canonical_json(manifest.normalized()) == LUNA_CANONICAL
    assert manifest.condition_hash() == (
        "07be27431590726ab20784c54bb554e59d0dcf2ccac019ed1897ad3c34791e31"
    )


def test_unset_thinking_effort_is_removed_from_the_hash(tmp_path: Path) -> None:
    text = LUNA_MANIFEST.replace("      thinking_effort: medium\n", "")
    manifest = load_manifest(write_manifest(tmp_path, text))
    assert "thinking_effort" not in manifest.normalized()["roster"][0]["generation"]
    assert manifest.condition_hash() == (
        "9a1dcb67fd4219f5cf76b7847d3c49bf707d3daca6c8dd3f13b5f8f7b4c4f9a9"
    )


def test_a_cache_write_price_counts_only_when_set(tmp_path: Path) -> None:
    text = LUNA_MANIFEST.replace(
        "    output_per_million_usd: 1.2\n",
        "    output_per_million_usd: 1.2\n    cache_write_per_million_usd: 0.25\n",
    )
    manifest = load_manifest(write_manifest(tmp_path, text))
    assert manifest.prices["gpt-5.6-luna"].cache_write_per_million_usd == 0.25
    assert manifest.condition_hash() != (
        "07be27431590726ab20784c54bb554e59d0dcf2ccac019ed1897ad3c34791e31"
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("luna", "07be27431590726ab20784c54bb554e59d0dcf2ccac019ed1897ad3c34791e31"),
        ("sonnet", "390b834a5d9ce623cf5145667918f25922f3e052d25c941f0bc5533a68186d17"),
        ("oracle", "5f32d5568047fc7b6adb120eeed8774be5e0e7b1f8d50d75f2fb5b761d8d3161"),
    ],
)
def test_repository_manifests_match_the_spec(name: str, expected: str) -> None:
    path = REPO / "manifests" / f"buzz-native-solo-{name}.yaml"
    manifest = load_manifest(path)
    assert manifest.condition == f"buzz-native-solo-{name}"
    assert manifest.condition_hash() == expected
    assert default_artifact_root(path) == REPO
    assert verify_artifacts(manifest, path, REPO) == []


@pytest.mark.parametrize(
    ("name", "endpoints"),
    [("oracle", ("oracle", "oracle")), ("sonnet", ("claude-sonnet-4-6", "claude-haiku-4-5"))],
)
def test_team_manifests_have_a_lead_and_two_workers(name: str, endpoints: tuple[str, str]) -> None:
    path = REPO / "manifests" / f"buzz-native-team-{name}.yaml"
    manifest = load_manifest(path)
    lead, workers = manifest.roster
    assert (lead.kind, lead.role, lead.count) == ("orchestrator", "lead", 1)
    assert (workers.kind, workers.role, workers.count) == ("worker", "worker", 2)
    assert (lead.endpoint, workers.endpoint) == endpoints
    assert set(manifest.prices) == set(endpoints)
    assert verify_artifacts(manifest, path, REPO) == []  # the personas' pinned sha256


def test_persona_file_is_exactly_the_spec_bytes() -> None:
    data = (REPO / "manifests/personas/buzz-native-solo.md").read_bytes()
    assert len(data) == 297 and data.endswith(b"workspace.\n") and b"\r" not in data
    assert (
        read_artifact(
            REPO, load_manifest(REPO / "manifests/buzz-native-solo-luna.yaml").roster[0].prompt
        )
        == data
    )


def test_json_manifest_and_integer_schema_version_hash_the_same(tmp_path: Path) -> None:
    data = luna_data()
    data["schema_version"] = 1
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_manifest(path).condition_hash() == (
        "07be27431590726ab20784c54bb554e59d0dcf2ccac019ed1897ad3c34791e31"
    )


def test_integers_in_float_fields_become_floats(tmp_path: Path) -> None:
    data = luna_data()
    data["prices"]["gpt-5.6-luna"]["output_per_million_usd"] = 2
    manifest = load_manifest(write_manifest(tmp_path, data))
    price = manifest.normalized()["prices"]["gpt-5.6-luna"]["output_per_million_usd"]
    assert isinstance(price, float) and price == 2.0


def test_defaults_fill_every_field(tmp_path: Path) -> None:
    data = luna_data()
    del data["metadata"]
    del data["roster"][0]["generation"]
    del data["roster"][0]["include_platform_prompt"]
    normalized = load_manifest(write_manifest(tmp_path, data)).normalized()
    assert normalized["metadata"] == {}
    assert normalized["roster"][0]["include_platform_prompt"] is True
    assert normalized["roster"][0]["generation"] == {
        "compact_at_percent": None,
        "compact_at_tokens": None,
        "context_window_tokens": None,
        "extra": {},
        "max_output_tokens": None,
    }


# --- derived facts ----------------------------------------------------------------------------


def test_agent_slots_put_the_orchestrator_first(tmp_path: Path) -> None:
    data = luna_data()
    orchestrator = data["roster"][0]
    worker = dict(orchestrator, id="worker", kind="worker", role="critic", count=2, concurrency=2)
    data["roster"] = [worker, dict(orchestrator, id="lead", role="lead")]
    manifest = load_manifest(write_manifest(tmp_path, data))
    slots = manifest.agent_slots()
    assert [s.agent_id for s in slots] == ["lead-1", "worker-1", "worker-2"]
    assert [s.kind for s in slots] == ["orchestrator", "worker", "worker"]
    assert slots[1].class_id == "worker" and slots[1].role == "critic"
    assert not manifest.is_solo and manifest.orchestrator.id == "lead"
    assert manifest.endpoints_used() == ["gpt-5.6-luna"]


# --- error paths ------------------------------------------------------------------------------


def test_unknown_key_names_its_path(tmp_path: Path) -> None:
    def change(d: dict) -> None:
        d["roster"][0]["generation"]["temperature"] = 0.2

    assert with_change(tmp_path, change) == ["roster[0].generation.temperature: unknown key"]


def test_duplicate_yaml_key_is_rejected(tmp_path: Path) -> None:
    text = LUNA_MANIFEST.replace("    role: solo\n", "    role: solo\n    role: lead\n")
    [problem] = problems(write_manifest(tmp_path, text))
    assert problem.startswith("roster[0].role: duplicate key (line ")


def test_duplicate_json_key_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"condition": "a", "condition": "b"}', encoding="utf-8")
    assert problems(path) == ["condition: duplicate key"]


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    [problem] = problems(write_manifest(tmp_path, "condition: [unclosed\n"))
    assert problem.startswith("line 2, column 1: invalid YAML")


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    assert problems(write_manifest(tmp_path, "- a\n")) == [
        "expected a mapping at the top level, got a list"
    ]
    assert problems(write_manifest(tmp_path, "")) == [
        "expected a mapping at the top level, got null"
    ]


def test_missing_file(tmp_path: Path) -> None:
    assert problems(tmp_path / "nope.yaml") == ["file not found"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(schema_version="2"), 'schema_version: must be "1" (got "2")'),
        (lambda d: d.update(schema_version=True), 'schema_version: must be "1" (got true)'),
        (
            lambda d: d.update(condition="-bad"),
            "condition: string should match pattern '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$' (got \"-bad\")",
        ),
        (
            lambda d: d["trial_budget"].update(timeout_seconds=True),
            "trial_budget.timeout_seconds: input should be a valid integer (got true)",
        ),
        (
            lambda d: d["trial_budget"].update(timeout_seconds="300"),
            'trial_budget.timeout_seconds: input should be a valid integer (got "300")',
        ),
        (
            lambda d: d["prices"]["gpt-5.6-luna"].update(output_per_million_usd="1.2"),
            'prices.gpt-5.6-luna.output_per_million_usd: input should be a valid number (got "1.2")',
        ),
        (
            lambda d: d["prices"]["gpt-5.6-luna"].update(cache_read_rate=1.5),
            "prices.gpt-5.6-luna.cache_read_rate: input should be less than or equal to 1 (got 1.5)",
        ),
        (
            lambda d: d["prices"]["gpt-5.6-luna"].update(input_per_million_usd=float("nan")),
            "prices.gpt-5.6-luna.input_per_million_usd: input should be a finite number (got nan)",
        ),
        (lambda d: d.pop("trial_budget"), "trial_budget: required key is missing"),
        (
            lambda d: d.update(roster=[]),
            "roster: list should have at least 1 item after validation, not 0",
        ),
        (
            lambda d: d["roster"][0].update(kind="boss"),
            "roster[0].kind: input should be 'orchestrator' or 'worker' (got \"boss\")",
        ),
        (
            lambda d: d["roster"][0].update(id="Solo"),
            "roster[0].id: string should match pattern '^[a-z0-9][a-z0-9._-]*$' (got \"Solo\")",
        ),
        (
            lambda d: d["roster"][0].update(id="a" * 49),
            'roster[0].id: string should have at most 48 characters (got "' + "a" * 49 + '")',
        ),
        (
            lambda d: d["roster"][0]["generation"].update(thinking_effort="extreme"),
            "roster[0].generation.thinking_effort: input should be 'none', 'minimal', 'low', "
            "'medium', 'high', 'xhigh' or 'max' (got \"extreme\")",
        ),
        (
            lambda d: d["roster"][0]["generation"].update(compact_at_percent=101),
            "roster[0].generation.compact_at_percent: input should be less than or equal to 100 (got 101)",
        ),
        (
            lambda d: d["roster"][0].update(harness="claude"),
            "roster[0].harness: input should be 'buzz-agent', 'goose' or 'codex' (got \"claude\")",
        ),
        (
            lambda d: d["roster"][0]["prompt"].update(path="/etc/passwd"),
            'roster[0].prompt.path: must be relative to the artifact root (got "/etc/passwd")',
        ),
        (
            lambda d: d["roster"][0]["prompt"].update(path="manifests/../../x.md"),
            'roster[0].prompt.path: must not contain a ".." component (got "manifests/../../x.md")',
        ),
        (
            lambda d: d["roster"][0]["prompt"].update(path="manifests\\x.md"),
            'roster[0].prompt.path: must use POSIX separators (got "manifests\\\\x.md")',
        ),
        (
            lambda d: d["roster"][0]["prompt"].update(sha256=PERSONA_SHA256.upper()),
            f'roster[0].prompt.sha256: must be 64 lowercase hex characters (got "{PERSONA_SHA256.upper()}")',
        ),
        (
            lambda d: d["roster"][0]["generation"].update(extra={"K": [1]}),
            "roster[0].generation.extra.K: must be a string, integer, number or boolean (got a list)",
        ),
        (
            lambda d: d["roster"][0]["generation"].update(extra={"K": float("inf")}),
            "roster[0].generation.extra.K: must be a finite number (got inf)",
        ),
    ],
)
def test_schema_errors(tmp_path: Path, change: Callable[[dict], None], expected: str) -> None:
    assert with_change(tmp_path, change) == [expected]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["roster"][0].update(kind="worker"),
            "roster: exactly one orchestrator is required (one entry with kind: orchestrator and "
            "count: 1), got 0",
        ),
        (
            lambda d: d["roster"][0].update(count=2),
            "roster: exactly one orchestrator is required (one entry with kind: orchestrator and "
            "count: 1), got 2",
        ),
        (
            lambda d: d["roster"][0].update(concurrency=2),
            "roster[0].concurrency: must be at most count (1), got 2",
        ),
        (
            lambda d: d["roster"][0].update(endpoint="other"),
            'prices: no price for endpoint "other" (roster[0].endpoint)',
        ),
        (
            lambda d: d["roster"][0]["generation"].update(max_output_tokens=200000),
            "roster[0].generation.max_output_tokens: must be less than context_window_tokens "
            "(200000), got 200000",
        ),
        (
            lambda d: d["roster"][0]["generation"].update(compact_at_tokens=196000),
            "roster[0].generation.compact_at_tokens: must be at most context_window_tokens - "
            "max_output_tokens (195904), got 196000",
        ),
        (
            lambda d: d["roster"][0]["generation"].update(extra={"lower": "x"}),
            "roster[0].generation.extra.lower: keys must match ^[A-Z][A-Z0-9_]*$",
        ),
        (
            lambda d: d["roster"][0]["generation"].update(
                extra={"HOME": "/x", "BUZZ_RELAY_URL": "ws://x"}
            ),
            "roster[0].generation.extra: endpoint env cannot override trial identity: "
            "['BUZZ_RELAY_URL', 'HOME']",
        ),
        (
            lambda d: d["metadata"].update(when=__import__("datetime").date(2026, 1, 1)),
            "metadata.when: not a JSON value (got date)",
        ),
    ],
)
def test_cross_field_errors(tmp_path: Path, change: Callable[[dict], None], expected: str) -> None:
    assert with_change(tmp_path, change) == [expected]


def test_compact_at_tokens_at_the_limit_is_accepted(tmp_path: Path) -> None:
    data = luna_data()
    data["roster"][0]["generation"]["compact_at_tokens"] = 200000 - 4096
    assert (
        load_manifest(write_manifest(tmp_path, data)).roster[0].generation.compact_at_tokens
        == 195904
    )


def test_several_errors_are_reported_together(tmp_path: Path) -> None:
    def change(d: dict) -> None:
        d["roster"][0]["generation"]["temperature"] = 1
        d["trial_budget"]["timeout_seconds"] = 0
        d["bogus"] = 1

    assert with_change(tmp_path, change) == [
        "roster[0].generation.temperature: unknown key",
        "trial_budget.timeout_seconds: input should be greater than 0 (got 0)",
        "bogus: unknown key",
    ]


def test_duplicate_roster_ids(tmp_path: Path) -> None:
    def change(d: dict) -> None:
        d["roster"].append(dict(d["roster"][0], kind="worker"))

    assert with_change(tmp_path, change) == [
        'roster[1].id: duplicate id "solo" (also roster[0].id)'
    ]


# --- artifacts --------------------------------------------------------------------------------


def test_artifact_mismatch_and_missing_file(tmp_path: Path) -> None:
    data = luna_data()
    data["roster"][0]["persona"] = {"path": "manifests/personas/extra.md", "sha256": "0" * 64}
    data["roster"][0]["skills"] = [{"path": "skills/none.md", "sha256": "1" * 64}]
    path = write_manifest(tmp_path, data)
    (tmp_path / "manifests/personas").mkdir(parents=True)
    (tmp_path / "manifests/personas/buzz-native-solo.md").write_bytes(
        (REPO / "manifests/personas/buzz-native-solo.md").read_bytes()
    )
    (tmp_path / "manifests/personas/extra.md").write_text("changed\n")
    manifest = load_manifest(path)
    root = default_artifact_root(path)
    assert root == tmp_path
    found = [str(err) for err in verify_artifacts(manifest, path, root)]
    actual = __import__("hashlib").sha256(b"changed\n").hexdigest()
    assert found == [
        f"{path}: roster[0].persona.sha256: does not match {tmp_path}/manifests/personas/extra.md: "
        f"sha256 is {actual}, the manifest pins {'0' * 64}",
        f"{path}: roster[0].skills[0].path: file not found: {tmp_path}/skills/none.md "
        f"(the artifact root is {tmp_path}, the parent of the manifest's directory; "
        "pass --artifact-root DIR for a manifest copied out of its repository)",
    ]
    with pytest.raises(ArtifactHashMismatch, match="the manifest pins 0000"):
        read_artifact(root, manifest.roster[0].persona)  # type: ignore[arg-type]
