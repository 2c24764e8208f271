"""`orchestra benchmark` end to end with the oracle on a real relay (external stack, local env).

One trial of one task through the real agent tree, evidence export, verifier and jobs dir;
then a resume that owes nothing, `summarize --json`, and an interrupted run (exit 130).
"""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from agent_trees import SILENT_ACP, fake_agent_tree
from benchmark_runs import TASK, benchmark_args, orchestra

from orchestra.paths import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_oracle_trial_scores_and_resume_owes_nothing(
    relay_url: str, embedded_pg, tmp_path: Path
) -> None:
    database_url = embedded_pg.new_database_url()
    args = benchmark_args(relay_url, database_url, tmp_path, "e2e")
    run = subprocess.run(orchestra(*args), capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    job = tmp_path / "jobs" / "e2e" / "e2e"  # the run `--job-name` names, and its one job
    trials = [p for p in job.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(trials) == 1
    trial = trials[0]
    result = json.loads((trial / "result.json").read_text())
    assert result["status"] == "scored" and result["reward"] == 1.0
    assert result["stop_reason"] == "turn_end"
    assert result["accounting"] == "event_log" and result["tokens"]["input"] > 0
    assert result["verifier"]["network"] == "not-isolated"
    assert result["sandbox"] == "bwrap"
    assert result["buzz"]["evidence_exported"] is True
    evidence = json.loads((trial / "agent" / "buzz" / "buzz-evidence.json").read_text())
    assert evidence["task_name"] == "reply-to-thread"
    assert evidence["messages"][0]["id"] == result["buzz"]["task_event_id"]
    assert (trial / "artifacts" / "buzz-evidence.json").read_text() == (
        trial / "agent" / "buzz" / "buzz-evidence.json"
    ).read_text()
    assert json.loads((trial / "verifier" / "reward.json").read_text())["reward"] == 1.0
    prompt = (trial / "agent" / "buzz" / "solo-1.system-prompt.md").read_text()
    assert "You have no teammates in this trial." in prompt
    job_result = json.loads((job / "result.json").read_text())
    assert job_result["stats"]["n_scored"] == 1 and job_result["finished_at"] is not None
    assert job_result["trials"][0]["reward"] == 1.0
    state = json.loads((tmp_path / "state" / "state.json").read_text())
    for path in trial.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert state["user_secret_key"].encode() not in data, path

    again = subprocess.run(orchestra(*args), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    config = json.loads((job / "config.json").read_text())
    assert config["resumes"][-1]["owed_trials"] == 0

    resumed = subprocess.run(
        orchestra(
            "resume",
            str(job),
            "--stack",
            "external",
            "--env",
            "local",
            "--relay-url",
            relay_url,
            "-q",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len(json.loads((job / "config.json").read_text())["resumes"]) == 2
    assert len(json.loads((job.parent / "run.json").read_text())["resumes"]) == 2

    changed = subprocess.run(
        orchestra(*args, "-k", "2"), capture_output=True, text=True, timeout=60
    )
    assert changed.returncode == 1
    assert "error: run e2e exists with a different configuration (attempts)" in changed.stderr

    summary = subprocess.run(
        orchestra("summarize", "--json", str(job)), capture_output=True, text=True, timeout=60
    )
    document = json.loads(summary.stdout)
    task = document["conditions"][0]["layers"]["regression"]["tasks"]["buzz-native/reply-to-thread"]
    assert task["pass_rate"] == 1.0 and task["pass_at_k"] == {"k": 1, "value": 1.0}


def test_interrupt_cancels_in_flight_trials_and_exits_130(
    relay_url: str, embedded_pg, tmp_path: Path, document_round_trip
) -> None:
    """Also the unsandboxed local env (no bwrap): one warning line, `sandbox: none`, and the
    sweep of what escaped by HOME/TMPDIR."""
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "stop")
    process = subprocess.Popen(
        orchestra(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "ORCHESTRA_BWRAP": ""},
    )
    job = tmp_path / "jobs" / "stop" / "stop"
    deadline = time.monotonic() + 120
    trial: Path | None = None
    while time.monotonic() < deadline:  # wait until an agent process exists
        logs = list(job.glob("*/agent/buzz/solo-1.stderr.log"))
        if logs:
            trial = logs[0].parents[2]
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)  # polling interval
    assert trial is not None
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    warnings = [line for line in stderr.splitlines() if "unsandboxed" in line]
    assert warnings == [
        "warning: local-env agents run unsandboxed (sandbox: none): ORCHESTRA_BWRAP is empty; "
        "they can read the host's files and other trials' processes"
    ], stderr
    result = json.loads((trial / "result.json").read_text())
    assert result["status"] == "cancelled" and result["sandbox"] == "none"
    assert result["exception_info"]["exception_type"] == "Cancelled"
    assert document_round_trip(job).diffs == {}
    sandbox = os.fsencode(str((trial / "sandbox").resolve()))
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                env = (proc / "environ").read_bytes()
            except OSError:
                continue
            assert sandbox not in env, f"orphan process {proc.name}"


def test_agent_exit_during_readiness_is_an_error(
    relay_url: str, embedded_pg, tmp_path: Path, document_round_trip
) -> None:
    bin_dir = fake_agent_tree(tmp_path / "bin", "import sys\nsys.exit(3)\n")
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "crash")
    run = subprocess.run(
        orchestra(*args, "--buzz-bin-dir", str(bin_dir)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 3, run.stderr
    [result_file] = (tmp_path / "jobs" / "crash" / "crash").glob("*/result.json")
    result = json.loads(result_file.read_text())
    assert result["status"] == "error" and result["phase"] == "finalize"
    info = result["exception_info"]
    assert info["exception_type"] == "AgentProcessExited" and info["phase"] == "setup"
    assert "exited with code 3" in info["exception_message"]
    assert result["buzz"]["evidence_exported"] is False and result["verifier"] is None
    job_log = (tmp_path / "jobs" / "crash" / "crash" / "job.log").read_text()
    assert "1 trial(s) owed" in job_log
    assert document_round_trip(tmp_path / "jobs" / "crash" / "crash").diffs == {}


def test_agent_timeout_is_scored_not_an_error(
    relay_url: str, embedded_pg, tmp_path: Path, document_round_trip
) -> None:
    bin_dir = fake_agent_tree(tmp_path / "bin", SILENT_ACP)
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "silent")
    # the multiplier scales the verifier's limit too: keep it at 30 s so only the agent times out
    task_toml = tmp_path / "tasks" / TASK.name / "task.toml"
    task_toml.write_text(
        task_toml.read_text().replace(
            "[verifier]\ntimeout_sec = 30.0", "[verifier]\ntimeout_sec = 6000.0"
        )
    )
    run = subprocess.run(
        orchestra(*args, "--buzz-bin-dir", str(bin_dir), "--timeout-multiplier", "0.005"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    [result_file] = (tmp_path / "jobs" / "silent" / "silent").glob("*/result.json")
    result = json.loads(result_file.read_text())
    assert result["status"] == "scored" and result["stop_reason"] == "timeout"
    assert result["reward"] == 0.0 and result["buzz"]["completion_message_id"] is None
    assert result["accounting"] == "unavailable" and result["tokens"] is None
    config = json.loads((result_file.parent / "config.json").read_text())
    assert config["timeouts"] == {"agent_seconds": 1.5, "verifier_seconds": 30.0}
    assert document_round_trip(tmp_path / "jobs" / "silent" / "silent").diffs == {}


GREEDY_ACP = """\
import json, os, signal, sys
log = open(os.environ["BUZZ_ACP_EVENT_LOG"], "a")
def write(record):
    log.write(json.dumps(record) + "\\n")
    log.flush()
write({"event": "subscribed", "channel_id": os.environ["BUZZ_ACP_CHANNELS"]})
write({"event": "turn_started", "turn_id": "t1", "session_id": "s1", "event_ids": []})
write({"event": "usage", "turn_id": "t1", "session_id": "s1", "input_tokens": 500,
       "output_tokens": 50, "cached_input_tokens": 100})
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    signal.pause()
"""


def test_agent_budget_stops_the_wait_and_still_scores(
    relay_url: str, embedded_pg, tmp_path: Path, document_round_trip
) -> None:
    manifest = tmp_path / "budget.yaml"
    text = (PROJECT_ROOT / "manifests" / "buzz-native-solo-oracle.yaml").read_text()
    text = text.replace("condition: buzz-native-solo-oracle", "condition: budget-test")
    text = text.replace(
        "    include_platform_prompt: true\n",
        "    include_platform_prompt: true\n    budget:\n      max_output_tokens: 10\n",
    )
    manifest.write_text(text)
    bin_dir = fake_agent_tree(tmp_path / "bin", GREEDY_ACP)
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "budget")
    run = subprocess.run(
        orchestra(
            *args,
            "--buzz-bin-dir",
            str(bin_dir),
            "--manifest",
            str(manifest),
            "--artifact-root",
            str(PROJECT_ROOT),
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    [result_file] = (tmp_path / "jobs" / "budget" / "budget").glob("*/result.json")
    result = json.loads(result_file.read_text())
    assert result["status"] == "scored" and result["stop_reason"] == "agent_budget"
    assert result["budget_exceeded"] == {
        "scope": "agent",
        "agent_id": "solo-1",
        "limit": "max_output_tokens",
        "max": 10,
        "value": 50,
    }
    assert result["tokens"]["input"] == 500 and result["tokens"]["cached_input"] == 100
    assert result["accounting"] == "event_log"
    assert document_round_trip(tmp_path / "jobs" / "budget" / "budget").diffs == {}


LATE_MENTION_ACP = """\
import asyncio, json, os
from orchestra.buzz import BuzzClient
from orchestra.nostr.keys import Keys
log = open(os.environ["BUZZ_ACP_EVENT_LOG"], "a")
def write(event, **fields):
    log.write(json.dumps({"event": event, **fields}) + "\\n")
    log.flush()
def turn(turn_id, event_ids):
    write("turn_started", turn_id=turn_id, session_id="s1", event_ids=event_ids)
    write("turn_delivered", turn_id=turn_id, event_ids=event_ids)
    write("turn_completed", turn_id=turn_id, stop_reason="end_turn", usage={})
async def main():
    keys = Keys.from_secret(bytes.fromhex(os.environ["BUZZ_PRIVATE_KEY"]))
    channel = os.environ["BUZZ_ACP_CHANNELS"]
    mentions = {"kinds": [9], "#h": [channel], "#p": [keys.pubkey]}
    async with BuzzClient.from_keys(os.environ["BUZZ_RELAY_URL"], keys) as client:
        async with client.subscribe([mentions]) as subscription:
            write("subscribed", channel_id=channel)
            seen = 0
            async for item in subscription:
                if not isinstance(item, dict):
                    continue
                seen += 1
                if seen > 1:  # the scripted mention: logged late, then the batch window
                    await asyncio.sleep(1.0)
                write("event_queued", event_id=item["id"])
                if seen > 1:
                    await asyncio.sleep(1.0)
                turn(f"t{seen}", [item["id"]])
asyncio.run(main())
"""


def test_a_scripted_mention_buzz_acp_logs_late_is_waited_for(
    relay_url: str, embedded_pg, tmp_path: Path, document_round_trip
) -> None:
    """The task's turn ends at once; the scripted mention reaches the fake buzz-acp then, but
    its log queues it 1 s later and delivers it after a 1 s batch window (orchestrator.md
    §7.11): the trial waits for that second turn, with a settle grace far shorter than both."""
    bin_dir = fake_agent_tree(tmp_path / "bin", LATE_MENTION_ACP)
    source = PROJECT_ROOT / "tasks" / "buzz-native" / "cross-thread-requests"
    args = benchmark_args(relay_url, embedded_pg.new_database_url(), tmp_path, "late", source)
    run = subprocess.run(
        orchestra(*args, "-k", "1", "--buzz-bin-dir", str(bin_dir), "--settle-ms", "100"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    job = tmp_path / "jobs" / "late" / "late"
    assert json.loads((job / "config.json").read_text())["options"]["trial"]["settle_ms"] == 100
    [result_file] = job.glob("*/result.json")
    result = json.loads(result_file.read_text())
    assert result["status"] == "scored" and result["stop_reason"] == "turn_end"
    assert result["unaccounted_events"] == []
    [scripted] = result["buzz"]["scripted_events"]
    log = result_file.parent / "agent" / "buzz" / "solo-1.events.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    turns = [r for r in records if r["event"] == "turn_delivered"]
    assert [r["event_ids"] for r in turns] == [
        [result["buzz"]["task_event_id"]],
        [scripted["event_id"]],
    ]
    assert [r["turn_id"] for r in records if r["event"] == "turn_completed"] == ["t1", "t2"]
    assert document_round_trip(job).diffs == {}
