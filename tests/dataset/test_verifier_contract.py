"""The common verifier contract (dataset.md §2.6, cases C1-C9 of §2.9) for all ten verifiers,
plus light fuzzing with malformed evidence. Verifiers run as real subprocesses, as test.sh runs
them; the large type matrix calls `score_evidence` in-process (the same code) to stay fast."""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import shutil
import subprocess

import pytest
from evidence_builder import AGENT_PUBKEY, last_agent_message
from positives import CHECKS_TRUNCATED, GRADED_KEYS, METRIC_KEYS, TASKS, positive
from verifier_harness import (
    SKILL_TASK,
    SKILL_TEXT,
    TASKS_ROOT,
    load_verifier,
    run_verifier,
    score_in_process,
    verifier_path,
)

WRONG_TYPES = (None, True, 7, "x", [], {}, [[1]])
MESSAGE_FIELDS = (
    "id",
    "pubkey",
    "content",
    "tags",
    "channel_id",
    "reply_to_event_id",
    "mentioned_pubkeys",
)


def assert_metric_shape(task: str, metrics: dict) -> None:
    """C8: exactly the task's keys, each the float 0.0 or 1.0."""
    assert set(metrics) == METRIC_KEYS[task]
    assert all(type(value) is float and value in (0.0, 1.0) for value in metrics.values())


def assert_failed_closed(task: str, metrics: dict, details: dict) -> None:
    assert_metric_shape(task, metrics)
    assert set(metrics.values()) == {0.0}
    assert set(details) == {"error"} and isinstance(details["error"], str) and details["error"]


def assert_scored_cleanly(task: str, metrics: dict, details: dict) -> None:
    """The document was scored (not a crash turned into an `internal:` error)."""
    assert_metric_shape(task, metrics)
    assert "error" not in details, details


@pytest.mark.parametrize("task", TASKS)
def test_positive_fixture_scores_one_everywhere(task, tmp_path):  # C4, C8
    result = run_verifier(task, tmp_path, positive(task))
    assert result.returncode == 0, result.stderr
    assert_metric_shape(task, result.metrics)
    assert set(result.metrics.values()) == {1.0}, result.details
    assert "error" not in result.details
    assert result.reward_text == json.dumps(result.metrics, sort_keys=True) + "\n"
    assert result.details_text == json.dumps(result.details, sort_keys=True, indent=2) + "\n"


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("root", [None, [], "text", 3])
def test_score_evidence_of_non_object_fails_closed(task, root):  # C1
    metrics, details = score_in_process(task, root)
    assert_failed_closed(task, metrics, details)
    assert details["error"] == "evidence root is not an object"


MALFORMED_FILES = {
    "missing": None,  # C2
    "not-json": b"{not json",  # C3
    "empty": b"",
    "not-utf8": b'{"schema_version": 1, "task_name": "\xff"}',
    "null-root": b"null",
    "list-root": b"[]",
    "deeply-nested": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("case", MALFORMED_FILES)
def test_unreadable_evidence_file_fails_closed(task, case, tmp_path):  # C2, C3
    result = run_verifier(task, tmp_path, raw=MALFORMED_FILES[case])
    assert result.returncode == 0
    assert_failed_closed(task, result.metrics, result.details)
    assert "Traceback" not in result.stderr
    if case in ("missing", "not-json", "not-utf8"):
        assert "buzz-evidence.json" in result.details["error"]


def other_task_name(task: str) -> str:
    return "user-mention" if task != "user-mention" else "reply-to-thread"


INCOMPLETE_SNAPSHOTS = [  # C5 (tasks that check truncation) and C6 (every task)
    *((task, "truncated", True) for task in CHECKS_TRUNCATED),
    *((task, "task_name", other_task_name(task)) for task in TASKS),
]


@pytest.mark.parametrize(("task", "key", "value"), INCOMPLETE_SNAPSHOTS)
def test_incomplete_snapshot_costs_the_reward(task, key, value, tmp_path):
    evidence = positive(task)
    evidence[key] = value
    result = run_verifier(task, tmp_path, evidence)
    assert result.metrics["evidence_complete"] == 0.0
    assert result.metrics["reward"] == 0.0


@pytest.mark.parametrize("task", TASKS)
def test_second_orchestrator_costs_the_reward(task, tmp_path):  # C7
    evidence = positive(task)
    evidence["identities"]["solo-2"] = {"role": "orchestrator", "pubkey": "9" * 64}
    result = run_verifier(task, tmp_path, evidence)
    assert_metric_shape(task, result.metrics)
    assert result.metrics["reward"] == 0.0


@pytest.mark.parametrize("task", TASKS)
def test_string_tags_and_null_content_do_not_crash(task, tmp_path):  # C9
    evidence = positive(task)
    scored = last_agent_message(evidence)
    scored["tags"], scored["content"] = "h ch", None
    result = run_verifier(task, tmp_path, evidence)
    assert result.returncode == 0
    assert_scored_cleanly(task, result.metrics, result.details)


@pytest.mark.parametrize("task", TASKS)
def test_top_level_keys_graded_exactly_where_the_task_uses_them(task):
    """Damaging a graded key (missing or any wrong type) costs the reward; the keys the task
    does not grade (e.g. message_count) never change it."""
    for key in positive(task):
        for damage in ("missing", *WRONG_TYPES):
            evidence = positive(task)
            if damage == "missing":
                del evidence[key]
            else:
                evidence[key] = copy.deepcopy(damage)
            metrics, details = score_in_process(task, evidence)
            assert_scored_cleanly(task, metrics, details)
            expected = 0.0 if key in GRADED_KEYS[task] else 1.0
            assert metrics["reward"] == expected, (key, damage, metrics)


@pytest.mark.parametrize("task", TASKS)
def test_message_fields_of_any_type_never_crash(task):
    for index in range(len(positive(task)["messages"])):
        for field in MESSAGE_FIELDS:
            for value in ("missing", *WRONG_TYPES):
                evidence = positive(task)
                if value == "missing":
                    del evidence["messages"][index][field]
                else:
                    evidence["messages"][index][field] = copy.deepcopy(value)
                metrics, details = score_in_process(task, evidence)
                assert_scored_cleanly(task, metrics, details)


@pytest.mark.parametrize("task", TASKS)
def test_junk_rows_are_skipped(task):
    """Non-object entries in the lists and maps of the evidence are ignored, not fatal."""
    evidence = positive(task)
    for key in ("messages", "directory", "scripted_events", "observed_channels"):
        evidence[key] += [None, "x", 3, [], [["p", AGENT_PUBKEY]]]
    evidence["identities"]["junk"] = "x"
    evidence["identities"]["list"] = [1, 2]
    metrics, details = score_in_process(task, evidence)
    assert_scored_cleanly(task, metrics, details)
    assert set(metrics.values()) == {1.0}


@pytest.mark.parametrize("task", TASKS)
def test_outputs_land_in_missing_directories(task, tmp_path):
    result = run_verifier(task, tmp_path / "deep" / "er", positive(task))
    assert result.metrics["reward"] == 1.0


@pytest.mark.parametrize("task", TASKS)
def test_module_constants_and_entry_points(task):
    module = load_verifier(task)
    assert module.TASK_NAME == task
    assert set(module.METRIC_NAMES) == METRIC_KEYS[task]
    assert set(module.REWARD_PARTS) < set(module.METRIC_NAMES)
    assert callable(module.score_evidence) and callable(module.main)


@pytest.mark.parametrize("task", TASKS)
def test_verifier_is_standard_library_python_3_9(task):
    """Parses as Python 3.9 and imports nothing outside the standard library (§2.6)."""
    source = verifier_path(task).read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 9))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= {"__future__", "argparse", "json", "re", "sys", "pathlib"}
    assert "from __future__ import annotations" in source  # keeps `X | None` hints 3.9-safe
    assert len(source.splitlines()) < 400


def expected_test_sh(task: str) -> str:
    skill = "  --skill-file /home/buzz/.claude/skills/context-health-check/SKILL.md \\\n"
    return (
        "#!/bin/sh\nset -eu\nmkdir -p /logs/verifier\npython3 /tests/verify.py \\\n"
        "  --evidence /logs/artifacts/buzz-evidence.json \\\n"
        + (skill if task == SKILL_TASK else "")
        + "  --reward /logs/verifier/reward.json \\\n"
        "  --details /logs/verifier/details.json\n"
    )


@pytest.mark.parametrize("task", TASKS)
def test_test_sh_is_the_contract_script(task):
    path = TASKS_ROOT / task / "tests" / "test.sh"
    assert path.read_text(encoding="utf-8") == expected_test_sh(task)
    assert os.access(path, os.X_OK)


@pytest.mark.parametrize("task", TASKS)
def test_test_sh_runs_end_to_end_with_mapped_paths(task, tmp_path):
    """test.sh with its container paths mapped to a trial directory (orchestrator §9.3)."""
    shutil.copytree(TASKS_ROOT / task / "tests", tmp_path / "tests")
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "buzz-evidence.json").write_text(json.dumps(positive(task)))
    skill = tmp_path / "home" / ".claude" / "skills" / "context-health-check" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL_TEXT)
    mapping = {
        "/logs/artifacts": "artifacts",
        "/logs/verifier": "verifier",
        "/tests": "tests",
        "/home/buzz": "home",
    }
    script = (tmp_path / "tests" / "test.sh").read_text()
    for prefix, local in mapping.items():
        script = re.sub(
            re.escape(prefix) + r"(?=[/\s'\"]|$)", str(tmp_path / local), script, flags=re.M
        )
    (tmp_path / "test.local.sh").write_text(script)
    python_dir = tmp_path / "bin"
    python_dir.mkdir()
    (python_dir / "python3").symlink_to(shutil.which("python3") or "/usr/bin/python3")
    env = {"PATH": f"{python_dir}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    done = subprocess.run(
        ["sh", "test.local.sh"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "verifier" / "reward.json").read_text())["reward"] == 1.0
