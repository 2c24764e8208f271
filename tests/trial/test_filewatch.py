"""Event-log following wakes on writes to the log itself (inotify), not on a timer."""

import asyncio
import json
from pathlib import Path

import pytest

from orchestra.trial import filewatch
from orchestra.trial.eventlog import EventLogFollower

pytestmark = pytest.mark.skipif(filewatch._LIBC is None, reason="inotify exists on Linux only")


async def test_only_writes_to_the_watched_name_wake(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "solo-1.events.jsonl"
    changes = filewatch.watch_file(log)  # before the directory and the file exist
    try:
        assert isinstance(changes, filewatch.InotifyChanges)
        (log.parent / "solo-1.stderr.log").write_text("human line\n")
        changes._drain()  # the kernel queued the sibling's events at write time
        assert not changes._changed.is_set()
        log.write_text('{"event": "subscribed"}\n')
        await asyncio.wait_for(changes.wait(), 10)
        with log.open("a") as handle:
            handle.write('{"event": "turn_started"}\n')
        await asyncio.wait_for(changes.wait(), 10)
    finally:
        changes.close()


async def test_follower_reads_each_append_without_polling(tmp_path: Path) -> None:
    log = tmp_path / "solo-1.events.jsonl"
    changed = asyncio.Event()

    def on_change() -> None:
        changed.set()

    follower = EventLogFollower(log, on_change=on_change, on_bad_line=lambda line: None)
    task = asyncio.create_task(follower.follow())
    try:
        log.write_text(json.dumps({"event": "subscribed", "channel_id": "c"}) + "\n")
        await asyncio.wait_for(changed.wait(), 10)
        assert follower.state.subscribed_channels == {"c"}
        changed.clear()
        with log.open("a") as handle:
            handle.write(json.dumps({"event": "turn_started", "turn_id": "t1"}) + "\n")
        await asyncio.wait_for(changed.wait(), 10)
        assert follower.state.starts == 1
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_polling_fallback_when_inotify_is_unavailable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(filewatch, "_LIBC", None)
    changes = filewatch.watch_file(tmp_path / "x.jsonl")
    assert isinstance(changes, filewatch.PollingChanges)
    await asyncio.wait_for(changes.wait(), 10)
    changes.close()
