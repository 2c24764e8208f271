"""Wall time of short `buzz` invocations (agents call the CLI many times per trial).

Run from the repository root: `.venv/bin/python -m tests.buzz.bench_startup [runs]`.
Starts an embedded PostgreSQL and a relay, then times `buzz --help`, `buzz messages send`
without and with an `@Name` mention (preflight reads), and `buzz messages get`; prints the
minimum and median of each over `runs` invocations (default 15).
"""

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestra.buzz import BuzzClient
from orchestra.nostr.keys import Keys
from orchestra.relay.embedded_db import EmbeddedPostgres
from tests.conftest import RelayProcess

BUZZ = str(Path(sys.executable).parent / "buzz")


def timed(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run([BUZZ, *argv], env=env, capture_output=True)
        samples.append(time.perf_counter() - started)
        if result.returncode != 0:
            raise SystemExit(f"buzz {' '.join(argv)} failed: {result.stderr.decode()}")
    return min(samples), statistics.median(samples)


async def prepare(url: str, keys: Keys) -> str:
    async with BuzzClient.from_keys(url, keys) as client:
        await client.users_set_profile(name="Bench User")
        return (await client.channels_create(name="bench"))["channel_id"]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    with tempfile.TemporaryDirectory() as scratch:
        server = EmbeddedPostgres(Path(scratch) / "pg")
        server.start_sync()
        relay = RelayProcess(server.create_database_sync("bench"), Path(scratch) / "relay.log")
        try:
            relay.start()
            keys = Keys.generate()
            channel = asyncio.run(prepare(relay.url, keys))
            env = {**os.environ, "BUZZ_RELAY_URL": relay.url, "BUZZ_PRIVATE_KEY": keys.secret_hex}
            cases = {
                "buzz --help": ["--help"],
                "buzz messages send (no mention)": [
                    "messages",
                    "send",
                    "--channel",
                    channel,
                    "--content",
                    "hello",
                ],
                "buzz messages send (@Name preflight)": [
                    "messages",
                    "send",
                    "--channel",
                    channel,
                    "--content",
                    "@Bench User hi",
                ],
                "buzz messages get": ["messages", "get", "--channel", channel],
            }
            print(f"{'command':40} {'min s':>8} {'median s':>9}")
            for name, argv in cases.items():
                fastest, median = timed(argv, env, runs)
                print(f"{name:40} {fastest:8.3f} {median:9.3f}")
        finally:
            relay.stop()
            server.stop_sync()


if __name__ == "__main__":
    main()
