"""Breaches the whole trace shows and the buzz-native verifiers, kept equal to upstream's,
do not score (docs/decisions.md D100; each task's README says which): the upstream verifier
still gives 1.0, while the template's `agent_events` holds the breach."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from evidence_builder import AGENT_PUBKEY, USER_PUBKEY, EvidenceBuilder
from positives import POSITIVE_BUILDERS
from verifier_harness import load_verifier

from orchestra.evidence.trace import build_trace
from orchestra.paths import TASK_TEMPLATE_DIR

B = "b" * 64


def _template_helpers() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "template_verify", TASK_TEMPLATE_DIR / "tests" / "verify.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HELPERS = _template_helpers()


def _elsewhere(content: str, **options: Any) -> Callable[[EvidenceBuilder], None]:
    """The agent posts `content` in a channel other than the trial's, before its answers."""

    def breach(trial: EvidenceBuilder) -> None:
        trial.agent_before_answer(content, reply_to=None, channel="side-room", **options)

    return breach


def _top_level(content: str) -> Callable[[EvidenceBuilder], None]:
    def breach(trial: EvidenceBuilder) -> None:
        trial.agent_before_answer(content, reply_to=None)

    return breach


#: task -> (the breach, what it does)
GAPS: dict[str, tuple[Callable[[EvidenceBuilder], None], str]] = {
    "reply-to-thread": (
        _top_level("It is 5,328."),
        "a wrong answer top-level before the right one",
    ),
    "user-mention": (_top_level("Checking the numbers."), "a top-level post before the answer"),
    "multiline-message": (_elsewhere("Working on it."), "a second post in another channel"),
    "narrative-agent-names": (
        _elsewhere("@Aurora Audit Bot status?", mentions=(B,)),
        "a bot woken in another channel",
    ),
    "ambiguous-user-mention": (
        _elsewhere("@Taylor Morgan Lee ORCHID-72 approved", mentions=("c" * 64,)),
        "the other namesake woken in another channel",
    ),
}


def _with_trace(trial: EvidenceBuilder) -> dict[str, Any]:
    evidence = trial.build()
    whole = build_trace(
        trial.events,
        trial_channel_id=trial.channel_id,
        identities=trial.identities,
        directory=trial.directory,
    )
    evidence["trace"], evidence["relay_events"] = whole.trace, whole.relay_events
    return evidence


@pytest.mark.parametrize("task", sorted(GAPS))
def test_upstream_verifier_misses_what_the_trace_shows(task: str) -> None:
    breach, _ = GAPS[task]
    trial = POSITIVE_BUILDERS[task]()
    answers = len(HELPERS.agent_events(_with_trace(trial)))
    breach(trial)
    evidence = _with_trace(trial)
    metrics, _ = load_verifier(task).score_evidence(evidence)
    assert metrics["reward"] == 1.0  # upstream parity: the score does not change
    events = HELPERS.agent_events(evidence)
    assert len(events) == answers + 1 and all(e["pubkey"] == AGENT_PUBKEY for e in events)
    assert USER_PUBKEY not in {e["pubkey"] for e in events}
