"""One oracle trial's agent-side wall time after readiness: task posted -> first `turn_started`,
and SIGTERM of `buzz-acp` -> every process of its tree gone.

Run from the repository root (starts its own embedded PostgreSQL, relay and oracle model):

    .venv/bin/python bench/agent_turn.py [--runs 7]

Each run launches `buzz-acp` with the orchestrator's own environment for the default manifest's
roster entry (as bench/agent_start.py does, so `BUZZ_ACP_BATCH_WINDOW_MS` is the default 1 s),
waits for `subscribed`, posts a task that p-tags the agent and registers it with the in-process
oracle (whose solve script posts one reply), then measures

* `task -> turn_started`: the `turn_started` record's `ts` minus the wall clock just before
  the task was published (the floor is the batch window, agent-harness.md §1.5);
* `turn_started -> turn_completed`;
* `SIGTERM -> tree gone`: the descendants of `buzz-acp` are read from /proc just before the
  signal; the time runs until buzz-acp has exited and none of them is alive (zombies count as
  gone), awaited on pidfds.

Medians over the runs (one warm-up run is not counted).
"""

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_start import complete_records, launch_environment, record_time
from relay_process import running_relay

from orchestra.agents.oracle import OracleAgent, OracleServer, OracleTrial, oracle_token
from orchestra.buzz import BuzzClient
from orchestra.nostr.keys import Keys
from orchestra.processes import alive, descendants, kill_group, wait_gone
from orchestra.stack.info import scripts_dir
from orchestra.trial.launch import OracleAccess

PROJECT_ROOT = Path(__file__).resolve().parent.parent
WAIT_S = 60.0
SOLVE = """#!/usr/bin/env bash
set -euo pipefail
buzz messages send --channel "$BUZZ_CHANNEL_ID" --content "done" \\
    --reply-to "$BUZZ_REPLY_TO" --mention "$BUZZ_REQUESTER_PUBKEY" > /dev/null
mkdir -p "{state}" && touch "{state}/done"
"""
STAGES = (
    "task -> event_queued",
    "task -> turn_started",
    "turn_started -> turn_completed",
    "SIGTERM -> tree gone",
)


async def wait_record(events: Path, name: str, process: asyncio.subprocess.Process) -> dict:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for record in complete_records(events):
            if record["event"] == name:
                return record
        if process.returncode is not None:
            raise RuntimeError(f"buzz-acp exited with {process.returncode}; see {events.parent}")
        await asyncio.sleep(0.005)  # polling interval of the log reader, not a synchronisation
    raise RuntimeError(f"no {name} record within {WAIT_S} s; see {events.parent}")


async def tree_gone_after_sigterm(process: asyncio.subprocess.Process) -> float:
    pids = descendants(process.pid)
    started = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    await asyncio.wait_for(process.wait(), WAIT_S)
    try:
        await asyncio.wait_for(wait_gone(pids), WAIT_S - (time.perf_counter() - started))
    except TimeoutError:
        raise RuntimeError(
            f"processes outlived buzz-acp: {[p for p in pids if alive(p)]}"
        ) from None
    return time.perf_counter() - started


async def one_trial(
    user: BuzzClient, user_name: str, relay_url: str, oracle: OracleServer, workdir: Path
) -> dict[str, float]:
    keys = Keys.generate()
    trial_id = uuid.uuid4().hex
    created = await user.channels_create(f"turn-{keys.pubkey[:8]}", visibility="private")
    channel = created["channel_id"]
    await user.channels_add_member(channel, keys.pubkey)
    token = oracle_token(trial_id, "solo-1")
    env = launch_environment(
        relay_url, keys, channel, workdir, OracleAccess(oracle.base_url(), token)
    )
    solve = workdir / "solve.sh"
    solve.write_text(SOLVE.format(state=workdir / "state"))
    solve.chmod(0o755)
    oracle.register(
        OracleTrial(
            trial_id=trial_id,
            channel_id=channel,
            requester_pubkey=user.pubkey,
            requester_name=user_name,
            solve_path=str(solve),
            state_dir=str(workdir / "state"),
            agents={token: OracleAgent(agent_id="solo-1")},
            log_path=workdir / "oracle.jsonl",
        )
    )
    events = workdir / "events.jsonl"
    with (workdir / "stderr.log").open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            str(scripts_dir() / "buzz-acp"),
            env=env,
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        await wait_record(events, "subscribed", process)
        posted = time.time()
        task = await user.messages_send(channel, "@solo-1 do the task", mention=[keys.pubkey])
        oracle.set_task_event(trial_id, task["event_id"])
        queued = await wait_record(events, "event_queued", process)
        started = await wait_record(events, "turn_started", process)
        completed = await wait_record(events, "turn_completed", process)
        gone = await tree_gone_after_sigterm(process)
        return {
            STAGES[0]: record_time(queued) - posted,
            STAGES[1]: record_time(started) - posted,
            STAGES[2]: record_time(completed) - record_time(started),
            STAGES[3]: gone,
        }
    finally:
        await kill_group(process)
        oracle.unregister(trial_id)


async def run(runs: int) -> list[dict[str, float]]:
    samples: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="agent-turn-") as scratch:
        root = Path(scratch)
        oracle = OracleServer(model_names=["oracle"])
        await oracle.start()
        try:
            async with (
                running_relay(root) as url,
                BuzzClient.from_keys(url, Keys.generate()) as user,
            ):
                await user.users_set_profile(display_name="Trial User")
                for n in range(runs + 1):  # run 0 warms the page cache and relay pools
                    sample = await one_trial(user, "Trial User", url, oracle, root / f"run-{n}")
                    if n:
                        samples.append(sample)
                    print(f"run {n}: " + ", ".join(f"{v:.3f}" for v in sample.values()))
        finally:
            await oracle.stop()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    os.chdir(PROJECT_ROOT)  # the default manifest and endpoint config are repo-relative
    samples = asyncio.run(run(args.runs))
    print(f"{len(samples)} trials")
    print("| Interval (seconds) | min | median | max |")
    print("|---|---|---|---|")
    for stage in STAGES:
        values = [s[stage] for s in samples]
        print(
            f"| {stage} | {min(values):.3f} | {statistics.median(values):.3f} | {max(values):.3f} |"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
