"""Live progress for slow models (orchestrator.md §7.11 "Liveness"): a trial's activity from
its agents' event logs, the watchdog that names an agent silent with no request outstanding,
and the progress row that shows the activity."""

from documents_support import log_record
from rich.console import Console

from orchestra.documents.trial import TrialIdentity, TrialResult
from orchestra.report.text.progress import Progress
from orchestra.trial.eventlog import AgentLogState
from orchestra.trial.watchdog import SILENCE_SECONDS, activity_text, silent_agents, watchdog_line

USAGE = {"session": {"input_tokens": 3000, "output_tokens": 200}}


def agent(*records: dict, last_event_at: float) -> AgentLogState:
    state = AgentLogState()
    for record in records:
        state.apply(log_record(**record))
    state.last_event_at = last_event_at  # when the follower read its last record
    return state


def test_activity_counts_turns_in_flight_tokens_and_the_last_event() -> None:
    waiting = agent({"event": "turn_started", "turn_id": "t1", "session_id": "s"},
                    last_event_at=100.0)  # fmt: skip
    done = agent(
        {"event": "turn_started", "turn_id": "t1", "session_id": "s"},
        {"event": "turn_completed", "turn_id": "t1", "session_id": "s", "stop_reason": "end_turn",
         "usage": USAGE},
        last_event_at=40.0,
    )  # fmt: skip
    states = {"lead-1": waiting, "worker-1": done}
    assert activity_text(states, now=250.0) == "1 in flight, 3.2k tokens, last event 150 s ago"
    assert activity_text({}, now=1.0) == "0 in flight, 0.0k tokens, no event yet"


def test_only_an_agent_silent_past_the_threshold_with_nothing_in_flight_is_named() -> None:
    stalled = agent({"event": "turn_started", "turn_id": "t1"}, last_event_at=0.0)
    idle = agent({"event": "subscribed", "channel_id": "c"}, last_event_at=0.0)
    recent = agent({"event": "subscribed", "channel_id": "c"}, last_event_at=SILENCE_SECONDS)
    states = {"stalled-1": stalled, "idle-1": idle, "recent-1": recent}
    silent = silent_agents(states, now=SILENCE_SECONDS + 5)
    assert silent == {"idle-1": SILENCE_SECONDS + 5}  # a request outstanding is not silence
    assert watchdog_line("idle-1", 125.4) == (
        "watchdog: idle-1 silent for 125 s with no request outstanding"
    )


def test_the_live_view_shows_a_running_trials_activity() -> None:
    console = Console(record=True, width=160, height=20)
    progress = Progress(console)
    progress.start_job("job", 1, [])
    identity = TrialIdentity(
        trial_id="id", trial_name="user-mention__abc", job_name="job", task_name="t/user-mention",
        short_name="user-mention", layer="regression", attempt=1, condition="c",
        manifest_sha256="a" * 64,
    )  # fmt: skip
    progress.trial_update(TrialResult.starting(identity, "2026-12-08T01:00:00.000000Z"))
    progress.activity("user-mention__abc", "1 in flight, 3.2k tokens, last event 150 s ago")
    progress.activity("not-running", "ignored")
    console.print(progress._view())
    text = console.export_text()
    assert "t/user-mention #1  (1 in flight, 3.2k tokens, last event 150 s ago)" in text
    assert "ignored" not in text
