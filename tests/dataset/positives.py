"""The positive fixture of every buzz-native task (dataset.md §3-§12), as evidence builders.

Adversarial cases start from these builders (adding messages) or from the built document
(forging or damaging fields).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evidence_builder import AGENT_PUBKEY, ROOT_ID, USER_PUBKEY, EvidenceBuilder
from test_task_files import TASK_METRICS
from verifier_harness import ACTION, CHECK_ID

B, C, D = "b" * 64, "c" * 64, "d" * 64
MULTILINE_NOTE = (
    "Release readiness\n\n- API: ready\n- Database: ready\n- Rollback: tested\n\n"
    "Owner: Platform Operations"
)
PROJECTION_ANSWER = (
    "Month 6 revenue: $160,811; month 6 expenses: $84,462; cumulative operating profit: $374,470."
)
FORECAST_ANSWER = (
    "- **North:** 17\n- **South:** 23\n- **reserve:** 11\n- **multiplier:** 3\n\n"
    "(17 + 23 − 11) × 3 = **87**"
)
CHANNEL_TARGETS = {
    "benchmark-user-07": "member",
    "benchmark-user-19": "member",
    "benchmark-user-42": "member",
    "benchmark-bot-03": "bot",
    "benchmark-bot-08": "bot",
}


def reply_to_thread() -> EvidenceBuilder:
    trial = EvidenceBuilder("reply-to-thread")
    trial.task()
    trial.agent(PROJECTION_ANSWER, event_id="answer")
    return trial


def user_mention() -> EvidenceBuilder:
    trial = EvidenceBuilder("user-mention", user_name="John Vincent Doe")
    trial.task()
    trial.agent("The annual cost is $5,328.", event_id="answer", mentions=(USER_PUBKEY,))
    return trial


def read_named_path() -> EvidenceBuilder:
    trial = EvidenceBuilder("read-named-path-outside-workspace")
    trial.task()
    trial.agent(f"{CHECK_ID}: {ACTION}", event_id="answer", reply_to=None)
    return trial


def directory_pubkey(name: str) -> str:
    """The positive fixture's pubkey for a look-alike: its 1-based index, 64 hex digits."""
    series = [f"benchmark-user-{i:02d}" for i in range(1, 51)]
    series += [f"benchmark-bot-{i:02d}" for i in range(1, 11)]
    return f"{series.index(name) + 1:064x}"


def create_channel() -> EvidenceBuilder:
    trial = EvidenceBuilder("create-channel-invite-users")
    for role, count in (("user", 50), ("bot", 10)):
        for index in range(1, count + 1):
            name = f"benchmark-{role}-{index:02d}"
            trial.add_directory(name, role, directory_pubkey(name))
    members = [{"pubkey": AGENT_PUBKEY, "role": "owner"}]
    members += [{"pubkey": directory_pubkey(n), "role": r} for n, r in CHANNEL_TARGETS.items()]
    trial.observed_channels.append(
        {
            "channel_id": "channel-1",
            "name": "fix-pr-1234",
            "channel_type": "stream",
            "visibility": "private",
            "archived": False,
            "ttl_seconds": 3600,
            "members": members,
        }
    )
    trial.task()
    trial.agent("Created fix-pr-1234.", event_id="answer", mentions=(USER_PUBKEY,))
    return trial


def multiline_message() -> EvidenceBuilder:
    trial = EvidenceBuilder("multiline-message", user_name="Eleanor June Brooks")
    trial.task()
    trial.agent(MULTILINE_NOTE, event_id="answer", mentions=(USER_PUBKEY,))
    return trial


def narrative_agent_names() -> EvidenceBuilder:
    trial = EvidenceBuilder("narrative-agent-names", user_name="Maya Elise Chen")
    trial.add_directory("Aurora Audit Bot", "bot", B)
    trial.add_directory("Beacon Deploy Bot", "bot", C)
    trial.task()
    text = "Aurora Audit Bot completed the audit.\nBeacon Deploy Bot remains idle."
    trial.agent(text, event_id="answer", mentions=(USER_PUBKEY,))
    return trial


REPORTS = (
    ("ledger-report", "Ledger Scout", B, "Ledger report: North is 17 and South is 23."),
    ("risk-report", "Risk Sentinel", C, "Risk report: subtract a reserve of 11."),
    ("operations-report", "Ops Forecaster", D, "Operations report: the final multiplier is 3."),
)


def interleaved_agent_reports() -> EvidenceBuilder:
    trial = EvidenceBuilder("interleaved-agent-reports", user_name="Nora Isabel Grant")
    for _label, name, pubkey, _text in REPORTS:
        trial.add_directory(name, "bot", pubkey)
    trial.task()
    for number, (label, name, pubkey, text) in enumerate(REPORTS, start=1):
        event_id = f"report-{number}"
        trial.post(
            pubkey, f"@solo-1 {text}", event_id=event_id, reply_to=ROOT_ID, mentions=(AGENT_PUBKEY,)
        )
        trial.script(label, event_id, name, reply_to_task=True)
    trial.agent(FORECAST_ANSWER, event_id="answer", mentions=(USER_PUBKEY,))
    return trial


def cross_thread_requests() -> EvidenceBuilder:
    trial = EvidenceBuilder("cross-thread-requests", user_name="Priya Simone Patel")
    trial.task("ALPHA request: calculate (13 * 26) + 8.")
    trial.post(USER_PUBKEY, "@solo-1 BETA request: calculate (84 / 7) + 29.", event_id="beta-root")
    trial.script("beta-request", "beta-root", "user", reply_to_task=False)
    trial.agent("ALPHA result: 346", event_id="alpha-answer", mentions=(USER_PUBKEY,))
    trial.agent(
        "BETA result: 41", event_id="beta-answer", reply_to="beta-root", mentions=(USER_PUBKEY,)
    )
    return trial


def ambiguous_user_mention() -> EvidenceBuilder:
    trial = EvidenceBuilder("ambiguous-user-mention", user_name="Olivia Grace Park")
    about = "Release captain. Routing code ORCHID-72."
    trial.add_directory(
        "Taylor Morgan Lee", "user", B, identity_id="taylor-release-captain", about=about
    )
    about = "Compliance observer. Routing code COBALT-19."
    trial.add_directory("Taylor Morgan Lee", "user", C, identity_id="taylor-observer", about=about)
    trial.task()
    trial.agent("@Taylor Morgan Lee ORCHID-72 approved", event_id="delivery", mentions=(B,))
    trial.agent(
        "Sent to the matching Taylor Morgan Lee.", event_id="callback", mentions=(USER_PUBKEY,)
    )
    return trial


def memory_retrieval() -> EvidenceBuilder:
    trial = EvidenceBuilder(
        "memory-retrieval", user_name="Amelia Rose Bennett", task_event_id="memory-question"
    )
    text = "We had 352,345 total customers in April 2024."
    trial.agent(text, event_id="answer", reply_to="memory-question")
    return trial


POSITIVE_BUILDERS: dict[str, Callable[[], EvidenceBuilder]] = {
    "reply-to-thread": reply_to_thread,
    "user-mention": user_mention,
    "read-named-path-outside-workspace": read_named_path,
    "create-channel-invite-users": create_channel,
    "multiline-message": multiline_message,
    "narrative-agent-names": narrative_agent_names,
    "interleaved-agent-reports": interleaved_agent_reports,
    "cross-thread-requests": cross_thread_requests,
    "ambiguous-user-mention": ambiguous_user_mention,
    "memory-retrieval": memory_retrieval,
}
TASKS = tuple(POSITIVE_BUILDERS)

# Every metric key of each task's reward.json: the spec table test_task_files.py keeps.
METRIC_KEYS: dict[str, set[str]] = TASK_METRICS

# Top-level evidence keys each verifier grades: damaging one must cost the reward, while the
# others must not change it (orchestrator.md §8.1 lists them all).
_EVERY_TASK = {"schema_version", "task_name", "identities"}
_TRANSCRIPT = _EVERY_TASK | {"truncated", "messages", "task_event_id"}
GRADED_KEYS: dict[str, set[str]] = {
    "reply-to-thread": _TRANSCRIPT | {"trial"},
    "user-mention": _TRANSCRIPT | {"trial"},
    "read-named-path-outside-workspace": _TRANSCRIPT | {"trial"},
    "create-channel-invite-users": _EVERY_TASK | {"directory", "observed_channels"},
    "multiline-message": _TRANSCRIPT | {"trial"},
    "narrative-agent-names": _TRANSCRIPT | {"directory"},
    "interleaved-agent-reports": _TRANSCRIPT | {"directory", "scripted_events"},
    "cross-thread-requests": _TRANSCRIPT | {"scripted_events"},
    "ambiguous-user-mention": _TRANSCRIPT | {"directory"},
    "memory-retrieval": _TRANSCRIPT | {"trial"},
}
# Tasks whose evidence_complete requires `truncated is False` (create-channel grades channel
# state, not messages).
CHECKS_TRUNCATED = tuple(task for task in TASKS if task != "create-channel-invite-users")


def positive(task: str) -> dict[str, Any]:
    return POSITIVE_BUILDERS[task]().build()
