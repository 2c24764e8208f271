"""The typed jobs-directory documents (orchestrator.md §10, §12): vocabularies, the document a
trial starts with, and one-line errors for files that do not match."""

import json
import re
from pathlib import Path

import pytest
from documents_support import STARTED, job_config, trial_result

from orchestra.documents.enums import ErrorType, Phase, TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig
from orchestra.documents.trial import PhaseTiming, TrialIdentity, TrialResult
from orchestra.paths import PROJECT_ROOT

SPEC = PROJECT_ROOT / "docs" / "reference" / "orchestrator.md"


def spec_section(number: str) -> str:
    text = SPEC.read_text(encoding="utf-8")
    start = text.index(f"\n## {number}. ")
    return text[start : text.index("\n## ", start + 1)]


def type_names(table_text: str) -> set[str]:
    """The backticked names in the first cells of a table's rows (quoted rows too)."""
    first_cells = re.findall(r"^(?:> )?\| ([^|]+) \|", table_text, re.MULTILINE)
    return {name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)}


def test_error_types_are_the_section_12_names() -> None:
    assert {str(kind) for kind in ErrorType} == type_names(spec_section("12"))


def test_a_trial_starts_running_in_setup_with_nothing_measured() -> None:
    fields = trial_result("buzz-native/user-mention").model_dump(
        include=set(TrialIdentity.model_fields)
    )
    identity = TrialIdentity.model_validate(fields)
    document = TrialResult.starting(identity, STARTED).model_dump(mode="json")
    assert document == {
        "schema_version": 1,
        **identity.model_dump(),
        "status": "running",
        "phase": "setup",
        "stop_reason": None,
        "reward": None,
        "rewards": None,
        "verifier": None,
        "verifier_inputs": None,
        "started_at": STARTED,
        "finished_at": None,
        "timings": {"agent_active_seconds": 0.0},  # no key for a phase not entered yet
        "tokens": None,
        "cost_usd": None,
        "accounting": "unavailable",
        "cached_estimated": False,
        "budget_exceeded": None,
        "flags": [],
        "unaccounted_events": [],
        "buzz": {
            "channel_id": None,
            "channel_name": None,
            "task_event_id": None,
            "completion_message_id": None,
            "scripted_events": [],
            "evidence_exported": False,
            "user": None,
            "agents": [],
        },
        "trajectories": {},
        "secret_scan": {"redactions": 0, "files": []},
        "exception_info": None,
        "retried_from": [],
    }


def test_entered_phases_are_written_in_timings(tmp_path: Path) -> None:
    result = trial_result("buzz-native/user-mention", phase=Phase.AGENT)
    result.timings.setup = PhaseTiming(started_at=STARTED, finished_at=STARTED, seconds=0.5)
    result.timings.agent = PhaseTiming(started_at=STARTED)
    result.write(tmp_path / "result.json")
    timings = json.loads((tmp_path / "result.json").read_text())["timings"]
    assert sorted(timings) == ["agent", "agent_active_seconds", "setup"]
    assert timings["agent"] == {"started_at": STARTED, "finished_at": None, "seconds": None}
    again = TrialResult.load(tmp_path / "result.json")
    assert again == result and again.timings.phase(Phase.SETUP) == result.timings.setup
    assert again.to_json() == (tmp_path / "result.json").read_text()


def test_documents_written_before_the_settle_grace_existed_still_load(tmp_path: Path) -> None:
    """`unaccounted_events` (§10.3) and `options.settle_ms` (§10.2) may be absent:
    older documents lack them."""
    result = trial_result("buzz-native/user-mention").model_dump(mode="json")
    del result["unaccounted_events"]
    (tmp_path / "result.json").write_text(json.dumps(result))
    assert TrialResult.load(tmp_path / "result.json").unaccounted_events == []
    config = job_config().model_dump(mode="json")
    del config["options"]["trial"]["settle_ms"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert JobConfig.load(tmp_path / "config.json").options.trial.settle_ms == 250


def test_status_vocabulary() -> None:
    assert [s.value for s in TrialStatus] == ["running", "scored", "error", "cancelled"]
    assert [s for s in TrialStatus if s.terminal] == [
        TrialStatus.SCORED,
        TrialStatus.ERROR,
        TrialStatus.CANCELLED,
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"status": "scored"}', "result.json: trial_id: required key is missing"),
        ("[1]", "result.json: (top level): expected a mapping (got a list)"),
    ],
)
def test_a_document_that_does_not_match_is_one_line_naming_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "result.json"
    path.write_text(text)
    with pytest.raises(DocumentError) as caught:
        TrialResult.load_if_readable(path)
    assert str(caught.value) == f"{path}: {message.removeprefix('result.json: ')}"
    assert "\n" not in str(caught.value)


def test_unknown_keys_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    document = trial_result("buzz-native/user-mention").model_dump(mode="json")
    path.write_text(json.dumps(document | {"score": 1}))
    with pytest.raises(DocumentError, match=r"result.json: score: unknown key$"):
        TrialResult.load(path)


def test_missing_or_unparsable_is_no_document(tmp_path: Path) -> None:
    assert TrialResult.load_if_readable(tmp_path / "result.json") is None
    (tmp_path / "result.json").write_text('{"trial_id": ')  # a writer that died mid-way
    assert TrialResult.load_if_readable(tmp_path / "result.json") is None
    with pytest.raises(DocumentError, match=r"result.json: missing or not valid JSON$"):
        TrialResult.load(tmp_path / "result.json")
