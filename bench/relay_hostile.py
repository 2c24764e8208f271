"""Relay under hostile load (issue 17): each attack of the issue replayed against a fresh
`buzz-relay serve --embedded-db` while a well-behaved probe publishes one event every 100 ms
and reads it back through a subscription.

Run (from the repository root, after `just setup`; about 6 minutes, loopback only):

    .venv/bin/python bench/relay_hostile.py [--json out.json] [--only NAME ...] [--scale S]

Per attack it reports the probe's OK latency and delivery latency (p50/p99/max), the relay's
RSS before, at peak and 10 s after, and the attacker's outcome (bench/hostile_attacks.py, one
process per attack so its CPU work does not stall the probe), then PASS/FAIL per target:
probe p99 < 100 ms and max < 1 s under every attack, peak RSS < 300 MB, RSS within 20 % of
its pre-attack value 10 s after, ingest with 10,000 non-matching subscriptions >= 80 % of
ingest without, the 50 MiB result complete, no traceback in the relay's log.
"""

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import psutil
from websockets.exceptions import ConnectionClosed

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_attacks import open_client
from relay_load import percentile
from relay_process import RelayHandle, relay_process

from orchestra.nostr.event import sign_event
from orchestra.nostr.keys import Keys

PROBE_INTERVAL_S = 0.1
PROBE_GRACE_S = 10.0  # a probe event unanswered this long after the attack counts as lost
SETTLE_S = 10.0  # "RSS back within 20 % of baseline 10 s after each attack"
ATTACKER_TIMEOUT_S = 180.0
ATTACKS = (
    "small_flood",
    "tags2000",
    "big_events",
    "nonmatching_subs",
    "req_flood",
    "large_result",
    "idle_sockets",
    "bad_unicode",
    "slow_readers",
)
TARGETS = {"p99_ms": 100.0, "max_ms": 1000.0, "peak_rss_mb": 300.0, "rss_return": 1.2}


@dataclass
class Probe:
    """Publishes a kind-1 event every 100 ms on its own connection and subscription."""

    url: str
    keys: Keys = field(default_factory=Keys.generate)
    sent: dict[str, float] = field(default_factory=dict)
    ok_ms: dict[str, float] = field(default_factory=dict)
    delivered_ms: dict[str, float] = field(default_factory=dict)
    refused: int = 0
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    closed: str | None = None  # why the relay closed the probe's connection, if it did

    async def start(self) -> None:
        self.ws = await open_client(self.url, self.keys)
        sub = {"kinds": [1], "authors": [self.keys.pubkey], "limit": 0}
        await self.ws.send(orjson.dumps(["REQ", "probe", sub]).decode())
        assert orjson.loads(await self.ws.recv())[0] == "EOSE"
        self._running = True
        self._reader = asyncio.create_task(self._read())
        self._publisher = asyncio.create_task(self._publish())

    async def _publish(self) -> None:
        n = 0
        next_at = time.perf_counter()
        while self._running and self.closed is None:
            event = sign_event(self.keys, 1, f"probe {n}")
            self.sent[event.id] = time.perf_counter()
            try:
                await self.ws.send('["EVENT",' + event.raw + "]")
            except ConnectionClosed as error:
                self.closed = str(error)
                return
            n += 1
            next_at += PROBE_INTERVAL_S
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))  # the probe's pace

    async def _read(self) -> None:
        try:
            await self._read_frames()
        except ConnectionClosed as error:
            self.closed = str(error)
            self.answered.set()

    async def _read_frames(self) -> None:
        while True:
            frame = orjson.loads(await self.ws.recv())
            now = time.perf_counter()
            if frame[0] == "OK" and frame[1] in self.sent:
                self.ok_ms[frame[1]] = (now - self.sent[frame[1]]) * 1000
                self.refused += frame[2] is not True
            elif frame[0] == "EVENT" and frame[1] == "probe":
                event_id = frame[2]["id"]
                if event_id in self.sent:
                    self.delivered_ms[event_id] = (now - self.sent[event_id]) * 1000
            if not self._running and self._all_answered():
                self.answered.set()

    def _all_answered(self) -> bool:
        return len(self.ok_ms) == len(self.delivered_ms) == len(self.sent)

    async def stop(self) -> dict:
        self._running = False
        await self._publisher
        if not self._all_answered():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.answered.wait(), PROBE_GRACE_S)
        self._reader.cancel()
        await self.ws.close()
        lost_ms = PROBE_GRACE_S * 1000
        return {
            "sent": len(self.sent),
            "refused": self.refused,
            "ok": summary([self.ok_ms.get(i, lost_ms) for i in self.sent]),
            "delivery": summary([self.delivered_ms.get(i, lost_ms) for i in self.sent]),
            "lost": sum(1 for i in self.sent if i not in self.delivered_ms),
            "connection_closed": self.closed,
        }


def summary(samples: list[float]) -> dict:
    if not samples:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    return {
        "p50_ms": round(percentile(samples, 50), 2),
        "p99_ms": round(percentile(samples, 99), 2),
        "max_ms": round(max(samples), 2),
    }


class Attacker:
    """One bench/hostile_attacks.py process."""

    def __init__(self, role: str, url: str, scale: float) -> None:
        self.args = [str(Path(__file__).with_name("hostile_attacks.py")), role, url]
        self.args += ["--scale", str(scale)]

    async def ready(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            *self.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        line = await asyncio.wait_for(self.process.stdout.readline(), ATTACKER_TIMEOUT_S)
        if line.strip() != b"ready":
            raise RuntimeError(f"attacker {self.args[1]} failed to prepare: {line!r}")

    def signal(self) -> None:
        self.process.stdin.write(b"go\n")

    async def outcome(self) -> dict:
        line = await asyncio.wait_for(self.process.stdout.readline(), ATTACKER_TIMEOUT_S)
        await self.process.wait()
        return json.loads(line) if line else {"error": "attacker exited without an outcome"}


class RssSampler:
    """The relay's resident memory (and open descriptors) before, at peak and now."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.before = self.peak = self.rss()
        self.fds_before = self.fds_peak = self.process.num_fds()

    def rss(self) -> int:
        return self.process.memory_info().rss

    async def run(self) -> None:
        while True:
            self.peak = max(self.peak, self.rss())
            self.fds_peak = max(self.fds_peak, self.process.num_fds())
            await asyncio.sleep(0.1)  # sampling period

    def report(self) -> dict:
        return {
            "before": mb(self.before),
            "peak": mb(self.peak),
            "after_10s": mb(self.rss()),
            "fds": [self.fds_before, self.fds_peak, self.process.num_fds()],
        }


class CpuMeter:
    """CPU seconds the relay process and its descendants (PostgreSQL) use from now on: a
    measure of the work an attack costs that the machine's load does not change much."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.start = self.seconds()

    def seconds(self) -> tuple[float, float]:
        own = self.process.cpu_times()
        descendants = 0.0
        for child in self.process.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                times = child.cpu_times()
                descendants += times.user + times.system
        return own.user + own.system, descendants

    def report(self) -> dict:
        relay, postgres = self.seconds()
        return {
            "relay": round(relay - self.start[0], 2),
            "postgres": round(postgres - self.start[1], 2),
        }


def mb(size: int) -> float:
    return round(size / 1e6, 1)


async def under_attack(
    relay: RelayHandle, role: str, scale: float, sampler: RssSampler | None = None
) -> dict:
    """Prepare the attacker, then run it with the probe and the RSS sampler watching (a
    sampler already running measures from where it started)."""
    attacker = Attacker(role, relay.url, scale)
    running = sampler is not None
    sampler = sampler or RssSampler(relay.pid)
    await attacker.ready()
    sampling = None if running else asyncio.create_task(sampler.run())
    probe = Probe(relay.url)
    await probe.start()
    cpu = CpuMeter(relay.pid)
    attacker.signal()
    started = time.perf_counter()
    outcome = await attacker.outcome()
    seconds = time.perf_counter() - started
    cpu_seconds = cpu.report()
    probe_result = await probe.stop()
    if sampling is None:
        return {
            "attack_seconds": round(seconds, 2),
            "cpu_seconds": cpu_seconds,
            "probe": probe_result,
            "attacker": outcome,
        }
    await asyncio.sleep(SETTLE_S)  # the measurement point of the RSS target
    sampling.cancel()
    return {
        "attack_seconds": round(seconds, 2),
        "cpu_seconds": cpu_seconds,
        "probe": probe_result,
        "rss_mb": sampler.report(),
        "attacker": outcome,
    }


async def ingest_rate(relay: RelayHandle, scale: float) -> float:
    attacker = Attacker("ingest", relay.url, scale)
    await attacker.ready()
    attacker.signal()
    return (await attacker.outcome())["events_per_second"]


async def nonmatching_subs(relay: RelayHandle, scale: float) -> dict:
    """Ingest throughput without and with 10 x 1,024 non-matching subscriptions (twice each,
    interleaved, against drift), the probe running during ingest with them; RSS from before
    the subscriptions to 10 s after they are gone."""
    without = [await ingest_rate(relay, scale)]
    sampler = RssSampler(relay.pid)
    sampling = asyncio.create_task(sampler.run())
    holder = Attacker("nonmatching_subs", relay.url, scale)
    await holder.ready()
    holder.signal()
    with_subs = await under_attack(relay, "ingest", scale, sampler)
    rates_with = [with_subs["attacker"]["events_per_second"], await ingest_rate(relay, scale)]
    holder.signal()
    held = await holder.outcome()
    without.append(await ingest_rate(relay, scale))
    await asyncio.sleep(SETTLE_S)  # the measurement point of the RSS target
    sampling.cancel()
    with_subs["rss_mb"] = sampler.report()
    ratio = sum(rates_with) / sum(without)
    with_subs["attacker"] = {
        **held,
        "ingest_events_per_second_without": without,
        "ingest_events_per_second_with": rates_with,
        "throughput_ratio": round(ratio, 3),
    }
    return with_subs


def log_tracebacks(relay: RelayHandle) -> list[str]:
    """The relay log's tracebacks, each with the line before it and its last 4 lines."""
    lines = relay.log_path.read_text(errors="replace").splitlines()
    found = []
    for n, line in enumerate(lines):
        if line.startswith("Traceback"):
            end = n + 1
            while end < len(lines) and lines[end].startswith((" ", "\t")):
                end += 1
            found.append("\n".join([*lines[max(0, n - 1) : n + 1], *lines[end - 3 : end + 1]]))
    return found


async def warm_up(relay: RelayHandle) -> None:
    """Normal use first (pools, caches, a little of everything), so the baseline is a relay
    that has served traffic, not a cold process."""
    probe = Probe(relay.url)
    await probe.start()
    attacker = Attacker("ingest", relay.url, 0.2)
    await attacker.ready()
    attacker.signal()
    await attacker.outcome()
    await probe.stop()
    await asyncio.sleep(SETTLE_S)  # let the relay settle to its idle footprint


async def run(args: argparse.Namespace) -> dict:
    results: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "load_average_before": os.getloadavg(),
        "attacks": {},
    }
    with tempfile.TemporaryDirectory(prefix="relay-hostile-") as tmp:
        async with relay_process(Path(tmp)) as relay:
            results["rss_mb_at_start"] = mb(psutil.Process(relay.pid).memory_info().rss)
            await warm_up(relay)
            results["rss_mb_after_warm_up"] = mb(psutil.Process(relay.pid).memory_info().rss)
            for name in args.only or ATTACKS:
                log_before = relay.log_path.stat().st_size
                load = round(os.getloadavg()[0], 1)
                try:
                    if name == "nonmatching_subs":
                        result = await nonmatching_subs(relay, args.scale)
                    else:
                        result = await under_attack(relay, name, args.scale)
                except Exception as error:  # one failed attack must not lose the others
                    result = {"error": f"{type(error).__name__}: {error}"}
                result["relay_log_bytes"] = relay.log_path.stat().st_size - log_before
                result["load_average_at_start"] = load
                results["attacks"][name] = result
                print(f"{name}: {json.dumps(result)}", file=sys.stderr, flush=True)
            results["tracebacks_in_log"] = log_tracebacks(relay)
            if args.keep_log:
                shutil.copyfile(relay.log_path, args.keep_log)
            results["rss_mb_at_end"] = mb(psutil.Process(relay.pid).memory_info().rss)
    results["load_average_after"] = os.getloadavg()
    results["verdicts"] = verdicts(results)
    return results


def verdicts(results: dict) -> list[tuple[str, bool, str]]:
    checks: list[tuple[str, bool, str]] = []
    for name, result in results["attacks"].items():
        if "error" in result:
            checks.append((f"{name}: completed", False, result["error"]))
            continue
        probe, rss = result["probe"], result["rss_mb"]
        for what in ("ok", "delivery"):
            p99, worst = probe[what]["p99_ms"], probe[what]["max_ms"]
            checks.append(
                (f"{name}: probe {what} p99 < 100 ms", p99 < TARGETS["p99_ms"], f"{p99} ms")
            )
            checks.append(
                (f"{name}: probe {what} max < 1 s", worst < TARGETS["max_ms"], f"{worst} ms")
            )
        checks.append(
            (
                f"{name}: peak RSS < 300 MB",
                rss["peak"] < TARGETS["peak_rss_mb"],
                f"{rss['peak']} MB",
            )
        )
        limit = rss["before"] * TARGETS["rss_return"]
        checks.append(
            (
                f"{name}: RSS within 20 % of before, 10 s after",
                rss["after_10s"] <= limit,
                f"{rss['after_10s']} MB (before {rss['before']} MB)",
            )
        )
    attacks = {name: r for name, r in results["attacks"].items() if "error" not in r}
    if "nonmatching_subs" in attacks:
        ratio = attacks["nonmatching_subs"]["attacker"]["throughput_ratio"]
        checks.append(
            ("ingest with 10,240 non-matching subscriptions >= 80 %", ratio >= 0.8, f"{ratio:.0%}")
        )
    if "large_result" in attacks:
        big = attacks["large_result"]["attacker"]
        complete = (
            big.get("events_received") == big.get("events_expected")
            and big.get("ended_with") == "EOSE"
        )
        checks.append(("50 MiB result complete", complete, f"{big.get('mib_received')} MiB"))
    traces = results["tracebacks_in_log"]
    checks.append(("no traceback in the relay log", not traces, f"{len(traces)}"))
    return checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=ATTACKS, help="run only these attacks")
    parser.add_argument("--scale", type=float, default=1.0, help="attack sizes (1 = the issue's)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--keep-log", type=Path, help="copy the relay's log to this file")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    text = json.dumps(results, indent=2)
    print(text)
    failed = [check for check in results["verdicts"] if not check[1]]
    for label, passed, value in results["verdicts"]:
        print(f"{'PASS' if passed else 'FAIL'}  {label}: {value}")
    print(f"{len(results['verdicts']) - len(failed)} passed, {len(failed)} failed")
    if args.json:
        args.json.write_text(text + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
