"""Wall time of `buzz` invocations, and of the same send through the in-process library.

Agents call the CLI many times per trial, so each invocation's cost is mostly interpreter start
and imports. Run from the repository root (starts its own embedded PostgreSQL and relay):

    .venv/bin/python bench/cli_latency.py [--runs 20]

Prints the minimum and median wall time (process start to exit) and the median CPU time
(user + system, `RUSAGE_CHILDREN`) of `buzz --help`,
`buzz messages send` without and with an `@Name` mention (the mention needs member and profile
reads), and `buzz messages get`; then the median of `BuzzClient.messages_send` on one open,
authenticated connection. Target (issue 3): CLI send median <= 300 ms. Results go to
docs/performance.md.
"""

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relay_process import running_relay

from orchestra.buzz import BuzzClient
from orchestra.nostr.keys import Keys

BUZZ = str(Path(sys.executable).parent / "buzz")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def timed_cli(
    argv: list[str], env: dict[str, str], runs: int
) -> tuple[float, float, float | None]:
    samples, cpu = [], []
    for _ in range(runs):
        started, cpu_before = time.perf_counter(), children_cpu()
        process = await asyncio.create_subprocess_exec(
            BUZZ, *argv, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        _, stderr = await process.communicate()
        samples.append(time.perf_counter() - started)
        cpu.append(children_cpu() - cpu_before)
        if process.returncode != 0:
            raise SystemExit(f"buzz {' '.join(argv)} failed: {stderr.decode()}")
    return min(samples), statistics.median(samples), statistics.median(cpu)


async def timed_library(
    client: BuzzClient, channel: str, runs: int
) -> tuple[float, float, float | None]:
    samples = []
    for n in range(runs):
        started = time.perf_counter()
        await client.messages_send(channel=channel, content=f"library send {n}")
        samples.append(time.perf_counter() - started)
    return min(samples), statistics.median(samples), None  # in-process: no CPU of its own


async def run(runs: int) -> list[tuple[str, float, float, float | None]]:
    with tempfile.TemporaryDirectory(prefix="cli-latency-") as scratch:
        async with running_relay(Path(scratch)) as url:
            keys = Keys.generate()
            async with BuzzClient.from_keys(url, keys) as client:
                await client.users_set_profile(name="Bench User")
                channel = (await client.channels_create(name="bench"))["channel_id"]
                env = {**os.environ, "BUZZ_RELAY_URL": url, "BUZZ_PRIVATE_KEY": keys.secret_hex}
                send = ["messages", "send", "--channel", channel, "--content"]
                cases = {
                    "buzz --help": ["--help"],
                    "buzz messages send (no mention)": [*send, "hello"],
                    "buzz messages send (@Name preflight)": [*send, "@Bench User hi"],
                    "buzz messages get": ["messages", "get", "--channel", channel],
                }
                rows = [(name, *await timed_cli(argv, env, runs)) for name, argv in cases.items()]
                rows.append(
                    (
                        "library messages_send (open connection)",
                        *await timed_library(client, channel, runs),
                    )
                )
                return rows


def main() -> None:
    parser = argparse.ArgumentParser(description="buzz CLI and library latency")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    rows = asyncio.run(run(args.runs))
    print(f"{'command':45} {'min s':>8} {'median s':>9} {'CPU s':>7}")
    for name, fastest, median, cpu in rows:
        cpu_text = f"{cpu:7.3f}" if cpu is not None else f"{'-':>7}"
        print(f"{name:45} {fastest:8.3f} {median:9.3f} {cpu_text}")


if __name__ == "__main__":
    main()
