"""A trial's failure and cancellation paths (orchestrator.md §7.2, §7.6, §12), through the real
`run_trial` against a fake environment and the real relay.

Each test asserts the written `result.json` (status, last phase, exception type and the phase
it happened in) and that stop, log collection and finalize ran whatever went wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trial_fakes import (
    PLANTED_API_KEY,
    TASK,
    Behaviour,
    FakeEnvironment,
    FakeKind,
    Trial,
    exits_after_subscribing,
    exits_at_once,
    finishes,
    finishes_after_acting_elsewhere,
    finishes_with_a_trajectory,
    finishes_with_a_turn_in_flight,
    fresh_key_canary,
    job_context,
    leaks_under_a_fresh_key,
    never_subscribes,
    result_of,
    subscribes,
    task,
)

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.nostr.keys import Keys
from orchestra.trial import setup_phase
from orchestra.trial.context import JobContext
from orchestra.trial.run import run_trial

#: What runs after any failure or cancellation: stop (16), log collection (17), finalize (21).
STOP, COLLECT, FINALIZE = "stop_agents", "get_tree", "close"


def assert_wound_up(result: dict[str, Any], environment: FakeEnvironment) -> None:
    """Stop, collect and finalize ran, in that order, and the final result was written."""
    calls = environment.calls
    assert calls.index(STOP) < calls.index(COLLECT) < calls.index(FINALIZE)
    assert result["phase"] == "finalize" and result["finished_at"] is not None
    assert result["timings"]["finalize"]["seconds"] is not None
    assert "phase finalize" in environment.trial.trial_log.read_text()


def assert_failed(result: dict[str, Any], exception_type: str, phase: str) -> None:
    info = result["exception_info"]
    assert result["status"] == "error", info
    assert (info["exception_type"], info["phase"]) == (exception_type, phase), info
    assert result["reward"] is None


async def test_a_trial_that_finishes_is_scored_through_every_phase(trial: Trial) -> None:
    result, environment = await trial(finishes)
    assert result["status"] == "scored" and result["reward"] == 1.0
    assert result["stop_reason"] == "done_message" and result["exception_info"] is None
    assert result["buzz"]["evidence_exported"] is True
    assert result["buzz"]["completion_message_id"] is not None
    assert set(result["timings"]) == {
        "setup",
        "agent",
        "teardown",
        "evidence",
        "verify",
        "finalize",
        "agent_active_seconds",
    }
    assert_wound_up(result, environment)
    assert environment.calls.index("isolate") == environment.calls.index(STOP) + 1
    # the verifier was given the exported evidence and the task's tests, recorded by hash
    evidence = environment.trial.evidence_json.read_bytes()
    inputs = result["verifier_inputs"]
    assert inputs["evidence_sha256"] == hashlib.sha256(evidence).hexdigest()
    assert [(f["path"], f["source"]) for f in inputs["files"]] == [
        ("/logs/artifacts/buzz-evidence.json", "evidence"),
        ("/tests/test.sh", "tests"),
        ("/tests/verify.py", "tests"),
    ]
    verify_py = (TASK / "tests" / "verify.py").read_bytes()
    assert inputs["files"][2]["sha256"] == hashlib.sha256(verify_py).hexdigest()


async def test_the_evidence_holds_the_whole_trace_and_the_written_files(trial: Trial) -> None:
    """orchestrator.md §8.9-§8.10: captured live, in the relay's order, secrets redacted."""
    result, environment = await trial(finishes_after_acting_elsewhere)
    assert result["status"] == "scored", result["exception_info"]
    evidence = json.loads(environment.trial.evidence_json.read_text())
    agent = evidence["identities"]["solo-1"]["pubkey"]
    trace = evidence["trace"]
    seqs = [entry["seq"] for entry in trace]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    task = next(e for e in trace if e["id"] == evidence["task_event_id"])
    after = [
        (e["kind"], e["content"]) for e in trace if e["pubkey"] == agent and e["seq"] > task["seq"]
    ]
    assert [kind for kind, _ in after] == [9007, 9, 0, 20001, 20001, 9]
    assert after[1][1] == "canary-elsewhere" and after[-1][1] == "DONE: replied"
    assert after[4][1] == "key [REDACTED]"  # an agent's own key never reaches the evidence
    side = next(e["channel_id"] for e in trace if e["kind"] == 9007 and e["pubkey"] == agent)
    # the relay's own state events of the channel the agent created are part of its trace
    assert {e["kind"] for e in trace if e["channel_id"] == side} >= {9007, 9, 39000, 39002}
    ephemeral = [e for e in trace if e["kind"] == 20001]
    assert not any(e["stored"] for e in ephemeral)
    stored_ids = {e["id"] for e in evidence["relay_events"]}
    assert not stored_ids & {e["id"] for e in ephemeral}
    profiles = [e for e in trace if e["kind"] == 0 and e["pubkey"] == agent]
    assert [p["stored"] for p in profiles][-1] is True and not any(
        p["stored"] for p in profiles[:-1]
    )
    assert any(e["content"] == "canary-elsewhere" for e in evidence["relay_events"])
    # the upstream keys are unchanged: the side channel is not in `messages`
    assert [m["content"] for m in evidence["messages"] if m["pubkey"] == agent] == ["DONE: replied"]
    [written] = evidence["agent_files"]
    assert written["agent_id"] == "solo-1" and written["path"].endswith("/notes.txt")
    assert written["content"] == "key=[REDACTED]\nACME_API_TOKEN line\n"
    assert written["truncated"] is False


async def test_relay_events_hold_what_only_the_relay_stored_for_each_of_two_trials(
    relay_url: str, relay_database_url: str, tmp_path: Path
) -> None:
    """orchestrator.md §8.9 "What the relay stored": a canary under a fresh key in a private
    channel with only that key reaches `relay_events` from the stack's database, for two
    trials at once; without a database the evidence says its scope is what was readable."""

    launched: set[str] = set()  # one run's services: each trial's secrets out of all rows
    keys: list[str] = []

    async def one(name: str, database_url: str | None) -> dict[str, Any]:
        kind = FakeKind(leaks_under_a_fresh_key)
        ctx = job_context(tmp_path / name, relay_url, kind)
        ctx.stack = dataclasses.replace(ctx.stack, database_url=database_url)
        ctx.launched_secrets = launched
        try:
            result = await asyncio.wait_for(run_trial(ctx, task(), 1), 120)
        finally:
            await ctx.stable_clients.close()
            await ctx.oracle.stop()
        assert result.status == "scored", result.exception_info
        [environment] = kind.environments
        keys.append(environment.agents[0].env["BUZZ_PRIVATE_KEY"])
        evidence: dict[str, Any] = json.loads(environment.trial.evidence_json.read_text())
        return evidence

    first, second, unread = await asyncio.gather(
        one("a", relay_database_url), one("b", relay_database_url), one("c", None)
    )
    for evidence in (first, second):
        agent = evidence["identities"]["solo-1"]["pubkey"]
        canary = fresh_key_canary(agent)
        assert evidence["relay_events_scope"] == "database"
        [hidden] = [e for e in evidence["relay_events"] if e["content"] == canary]
        assert hidden["author"] == "unknown" and hidden["pubkey"] != agent
        assert any(e["content"] == "key [REDACTED]" for e in evidence["relay_events"])
        # the trial's own events are the capture's: the hidden post is not in `trace`, and
        # every captured event keeps its number
        assert canary not in {e["content"] for e in evidence["trace"]}
        assert hidden["seq"] > max(e["seq"] for e in evidence["trace"])
        by_id = {e["id"]: e for e in evidence["relay_events"]}
        assert all(by_id[e["id"]] == e for e in evidence["trace"] if e["stored"])
    for evidence in (first, second, unread):
        text = json.dumps(evidence)
        assert not [key for key in keys if key in text]  # neither its own nor another's
    unread_canary = fresh_key_canary(unread["identities"]["solo-1"]["pubkey"])
    assert unread["relay_events_scope"] == "readable"
    assert unread_canary not in {e["content"] for e in unread["relay_events"]}


async def test_the_trajectory_is_assembled_linked_and_cleared_of_secrets(trial: Trial) -> None:
    def plant_api_key(_kind: FakeKind, ctx: JobContext) -> None:
        ctx.api_keys["PLANTED_KEY"] = PLANTED_API_KEY

    result, environment = await trial(finishes_with_a_trajectory, setup=plant_api_key)
    assert result["status"] == "scored"
    assert result["trajectories"] == {"solo-1": "agent/buzz/solo-1.trajectory.json"}
    document = environment.trial.root / result["trajectories"]["solo-1"]
    side_file = environment.trial.trajectory_log("solo-1")
    trajectory = Trajectory.model_validate_json(document.read_bytes())  # still valid JSON
    assert trajectory.session_id == f"{result['trial_id']}:solo-1"
    assert [step.source for step in trajectory.steps] == ["system", "user", "agent", "agent"]
    observation = trajectory.steps[2].observation
    assert observation is not None
    assert observation.results[0].content == "[REDACTED]\n[exit code: 0]"
    assert trajectory.steps[3].message == "The key is [REDACTED]; the API key is [REDACTED]."
    keys = Keys.from_secret(bytes.fromhex(environment.agents[0].env["BUZZ_PRIVATE_KEY"]))
    for path in (document, side_file):
        data = path.read_text(encoding="utf-8")
        for secret in (keys.secret_hex, keys.nsec, PLANTED_API_KEY, json.dumps(PLANTED_API_KEY)):
            assert secret.strip('"') not in data, (path.name, secret)
    scanned = result["secret_scan"]["files"]
    assert {"agent/buzz/solo-1.trajectory.json", "agent/buzz/solo-1.trajectory.jsonl"} <= set(
        scanned
    )
    # priced at assembly with the price of the agent's endpoint (the oracle's is 0)
    assert trajectory.final_metrics.total_cost_usd == 0.0
    assert trajectory.final_metrics.total_prompt_tokens == 30


def _raise_in(primitive: str, error: BaseException) -> Callable[[FakeKind, JobContext], None]:
    return lambda kind, _ctx: kind.faults.raises.update({primitive: error})


@pytest.mark.parametrize(
    ("behaviour", "failing", "setup", "exception_type"),
    [
        (subscribes, (), _raise_in("prepare", OSError("no space left")), "EnvironmentStartError"),
        (subscribes, ("channels_add_member",), lambda *_: None, "ProvisioningError"),
        (subscribes, (), _raise_in("start_agent", OSError("no buzz-acp")), "AgentLaunchError"),
        (never_subscribes, (), lambda *_: None, "AgentReadinessTimeout"),
        (exits_at_once, (), lambda *_: None, "AgentProcessExited"),
    ],
)
async def test_a_setup_error_skips_the_work_but_not_the_wind_up(
    trial: Trial,
    monkeypatch: pytest.MonkeyPatch,
    behaviour: Behaviour,
    failing: tuple[str, ...],
    setup: Callable[[FakeKind, JobContext], None],
    exception_type: str,
) -> None:
    monkeypatch.setattr(setup_phase, "READINESS_SECONDS", 0.5)
    result, environment = await trial(behaviour, failing=failing, setup=setup)
    assert_failed(result, exception_type, "setup")
    assert result["stop_reason"] is None and result["verifier"] is None
    assert result["buzz"]["evidence_exported"] is False
    assert result["timings"].keys() >= {"setup", "teardown", "finalize"}
    assert "agent" not in result["timings"] and "evidence" not in result["timings"]
    assert_wound_up(result, environment)


async def test_an_agent_readiness_timeout_names_the_pending_agent(
    trial: Trial, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(setup_phase, "READINESS_SECONDS", 0.5)
    result, _ = await trial(never_subscribes)
    assert result["exception_info"]["exception_message"] == (
        "agents not subscribed within 0.5 s: solo-1"
    )


async def test_an_agent_that_exits_during_the_agent_phase_is_an_error(trial: Trial) -> None:
    result, environment = await trial(exits_after_subscribing)
    assert_failed(result, "AgentProcessExited", "agent")
    assert "agent solo-1 exited with code 7" in result["exception_info"]["exception_message"]
    assert result["verifier"] is None
    assert_wound_up(result, environment)


async def test_a_task_post_the_relay_refuses_is_an_error(trial: Trial) -> None:
    result, environment = await trial(subscribes, failing=("messages_send",))
    assert_failed(result, "TaskPostError", "agent")
    assert "messages_send refused" in result["exception_info"]["exception_message"]
    assert result["buzz"]["task_event_id"] is None and result["verifier"] is None
    assert_wound_up(result, environment)


async def test_an_evidence_export_failure_is_an_error_and_skips_the_verifier(
    trial: Trial,
) -> None:
    result, environment = await trial(finishes, failing=("messages_get",))
    assert_failed(result, "EvidenceExportError", "evidence")
    assert result["stop_reason"] == "done_message"  # the agent phase itself ended normally
    assert result["buzz"]["evidence_exported"] is False and result["verifier"] is None
    assert "verify" not in result["timings"]
    trial_dir = environment.trial
    assert "messages_get refused" in trial_dir.evidence_error_txt.read_text()
    assert not trial_dir.evidence_json.exists() and not trial_dir.artifacts_evidence_json.exists()
    assert not trial_dir.verifier_inputs_dir.exists()
    assert_wound_up(result, environment)


@pytest.mark.parametrize(
    ("behaviour", "phase"),
    [
        (subscribes, "setup"),
        (subscribes, "agent"),
        (finishes_with_a_turn_in_flight, "teardown"),
        (finishes, "evidence"),
    ],
)
async def test_a_cancellation_jumps_to_stop_and_finalize(
    trial: Trial, behaviour: Behaviour, phase: str
) -> None:
    result, environment = await trial(behaviour, cancel_in=phase)
    assert result["status"] == "cancelled"
    info = result["exception_info"]
    assert (info["exception_type"], info["phase"]) == ("Cancelled", phase)
    assert result["reward"] is None and result["verifier"] is None
    assert "verify" not in result["timings"]
    assert_wound_up(result, environment)


async def test_a_cancellation_during_the_verifier_leaves_no_score(trial: Trial) -> None:
    release: list[asyncio.Event] = []

    def hold_the_verifier(kind: FakeKind, ctx: JobContext) -> None:
        release.append(kind.faults.block("verifier"))

    result, environment = await trial(finishes, cancel_in="verify", setup=hold_the_verifier)
    assert not release[0].is_set()  # the verifier never finished
    assert result["status"] == "cancelled"
    assert result["exception_info"]["phase"] == "verify"
    assert result["buzz"]["evidence_exported"] is True and result["rewards"] is None
    assert_wound_up(result, environment)


async def test_a_second_cancellation_during_stop_hurries_it_but_stop_still_completes(
    relay_url: str, tmp_path: Path
) -> None:
    kind = FakeKind(subscribes)
    ctx = job_context(tmp_path, relay_url, kind)
    kind.faults.block("stop_agents")  # a stop that only the second signal cuts short
    entered_agent_phase = asyncio.Event()
    ctx.on_trial_update = lambda result: (
        entered_agent_phase.set() if result.phase == "agent" else None
    )
    try:
        running = asyncio.create_task(run_trial(ctx, task(), 1))
        await asyncio.wait_for(entered_agent_phase.wait(), 60)
        running.cancel()  # the first SIGINT
        await asyncio.wait_for(kind.faults.reached_event("stop_agents").wait(), 60)
        running.cancel()  # the second one: the runner also sets `hurry` (§7.6)
        ctx.hurry.set()
        returned = await asyncio.wait_for(running, 60)
    finally:
        await ctx.stable_clients.close()
        await ctx.oracle.stop()
    [environment] = kind.environments
    assert environment.hurried
    result = result_of(environment)
    assert returned.model_dump(mode="json") == result
    assert result["status"] == "cancelled"
    assert result["exception_info"]["phase"] == "agent"
    assert_wound_up(result, environment)
    assert all(agent.exit_code is not None for agent in environment.agents)
