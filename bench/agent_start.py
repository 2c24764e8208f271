"""Cold start of one agent tree (issue 4): `buzz-acp` launched until its `subscribed` record.

Run from the repository root (starts its own embedded PostgreSQL and relay):

    .venv/bin/python bench/agent_start.py [--runs 10] [--parallel 1]

Each run mints a fresh agent key, adds it to a fresh private channel (not timed), then launches
`buzz-acp` exactly as a local-env oracle trial does — the orchestrator's own `agent_environment`
for the default manifest's roster entry and its `LocalAgentProcess` launcher — and waits for the
`subscribed` record of that channel in the ACP event log (orchestrator.md §7.2 step 10, §7.10;
agent-harness.md §1.11). Latency = that record's `ts` minus the wall clock just before the launch;
the event log's earlier records split it into stages. `--parallel P` launches P trees at once
(what a trial sees at `-n P`). Target (issue 4): median <= 1.5 s. Results go to
docs/performance.md.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relay_process import running_relay

from orchestra.buzz import BuzzClient
from orchestra.config.condition import load_condition
from orchestra.nostr.keys import Keys
from orchestra.paths import DEFAULT_ENDPOINT_CONFIG, DEFAULT_MANIFEST
from orchestra.stack.info import scripts_dir
from orchestra.trial.env.local import LocalAgentProcess
from orchestra.trial.launch import (
    AgentLaunchSpec,
    OracleAccess,
    agent_environment,
    endpoint_variables,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# buzz-agent reaches its model only when a turn runs; nothing listens here and nothing calls it.
UNUSED_ORACLE = OracleAccess("http://127.0.0.1:9/v1", "oracle-bench-start")
STAGES = ("startup", "agent_spawned", "agent_initialized", "relay_authenticated", "subscribed")
READY_TIMEOUT_S = 60.0
TARGET_S = 1.5
INHERITED = ("PATH", "LANG", "LC_ALL", "TERM")


def launch_environment(
    relay_url: str,
    keys: Keys,
    channel_id: str,
    workdir: Path,
    oracle: OracleAccess = UNUSED_ORACLE,
) -> dict:
    condition = load_condition(DEFAULT_MANIFEST, DEFAULT_ENDPOINT_CONFIG)
    entry = condition.manifest.roster[0]
    endpoint_env = endpoint_variables(
        entry.endpoint, condition.endpoint(entry), api_key=None, oracle=oracle
    )
    workdir.mkdir()
    prompt = workdir / "system-prompt.md"
    prompt.write_text("# Buzz agent\n\nYou are solo-1, benchmarked for start-up time.\n")
    spec = AgentLaunchSpec(
        relay_url=relay_url,
        secret_hex=keys.secret_hex,
        channel_id=channel_id,
        programs_dir=scripts_dir(),
        system_prompt_file=str(prompt),
        event_log_file=str(workdir / "events.jsonl"),
        trajectory_log_file=str(workdir / "trajectory.jsonl"),
        home=str(workdir),
        tmpdir=str(workdir),
        path=None,
        agent_timeout_seconds=300,
    )
    env = agent_environment(entry, endpoint_env, spec)
    env.update({key: os.environ[key] for key in INHERITED if key in os.environ})
    return env


def complete_records(events: Path) -> list[dict]:
    """The log's complete lines (a partial last line waits for its newline)."""
    text = events.read_text(encoding="utf-8") if events.exists() else ""
    return [json.loads(line) for line in text.split("\n")[:-1] if line]


def record_time(record: dict) -> float:
    return datetime.fromisoformat(record["ts"].replace("Z", "+00:00")).timestamp()


async def wait_subscribed(events: Path, channel_id: str, agent: LocalAgentProcess) -> list[dict]:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        records = complete_records(events)
        if any(r["event"] == "subscribed" and r["channel_id"] == channel_id for r in records):
            return records
        if not agent.running:
            raise RuntimeError(f"buzz-acp exited with {agent.exit_code}; see {events.parent}")
        await asyncio.sleep(0.01)  # polling interval of the log reader, not a synchronisation
    raise RuntimeError(f"no subscribed record within {READY_TIMEOUT_S} s; see {events.parent}")


async def one_start(user: BuzzClient, relay_url: str, workdir: Path) -> dict[str, float]:
    """Seconds from launch to each stage's first record."""
    keys = Keys.generate()
    created = await user.channels_create(f"start-{keys.pubkey[:8]}", visibility="private")
    channel_id = created["channel_id"]
    await user.channels_add_member(channel_id, keys.pubkey)
    env = launch_environment(relay_url, keys, channel_id, workdir)
    agent = LocalAgentProcess("solo-1", on_exit=lambda: None)
    launched = time.time()
    await agent.start(
        scripts_dir() / "buzz-acp", env, workdir, workdir / "stdout.log", workdir / "stderr.log"
    )
    try:
        records = await wait_subscribed(workdir / "events.jsonl", channel_id, agent)
    finally:
        await agent.stop()
    first = {}
    for record in records:
        first.setdefault(record["event"], record_time(record) - launched)
    return {stage: first[stage] for stage in STAGES if stage in first}


async def run(runs: int, parallel: int) -> list[dict[str, float]]:
    samples: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="agent-start-") as scratch:
        root = Path(scratch)
        async with running_relay(root) as url, BuzzClient.from_keys(url, Keys.generate()) as user:
            await one_start(user, url, root / "warm-up")  # page cache and relay pool warm-up
            for n in range(runs):
                async with asyncio.TaskGroup() as group:
                    tasks = [
                        group.create_task(one_start(user, url, root / f"run-{n}-{p}"))
                        for p in range(parallel)
                    ]
                samples.extend(task.result() for task in tasks)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--parallel", type=int, default=1, help="agent trees started at once")
    args = parser.parse_args()
    os.chdir(PROJECT_ROOT)  # the default manifest and endpoint config are repo-relative
    samples = asyncio.run(run(args.runs, args.parallel))
    print(f"{len(samples)} starts ({args.runs} rounds x {args.parallel} at once)")
    print("| Stage (seconds after launch) | min | median | max |")
    print("|---|---|---|---|")
    for stage in STAGES:
        values = [s[stage] for s in samples if stage in s]
        if values:
            print(
                f"| `{stage}` | {min(values):.3f} | {statistics.median(values):.3f} "
                f"| {max(values):.3f} |"
            )
    median = statistics.median(s["subscribed"] for s in samples)
    verdict = "met" if median <= TARGET_S else "MISSED"
    print(f"median launch -> subscribed: {median:.3f} s (target <= {TARGET_S} s: {verdict})")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
