"""Ownership files (orchestra.locks): one holder at a time, and a dead holder is recognised."""

import subprocess
import sys
from pathlib import Path

from orchestra.locks import OwnerLock

HOLD = """\
import sys, time
from pathlib import Path
from orchestra.locks import OwnerLock
lock = OwnerLock(Path(sys.argv[1]))
assert lock.acquire()
lock.claim()
print("held", flush=True)
time.sleep(600)
"""


def test_one_holder_at_a_time_and_release_clears_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x" / "owner.lock"
    first, second = OwnerLock(path), OwnerLock(path)
    assert first.acquire() and first.previous is None
    first.claim()
    assert not second.acquire()  # a lock is per open file: also within one process
    assert second.holder() == int(path.read_text())
    first.release()
    assert path.read_text() == ""
    assert second.acquire() and second.previous is None
    second.release()


def test_a_holder_killed_by_sigkill_leaves_its_pid_for_the_next(tmp_path: Path) -> None:
    path = tmp_path / "owner.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    lock = OwnerLock(path)
    assert not lock.acquire()
    holder.kill()
    holder.wait()
    assert lock.acquire() and lock.previous == holder.pid  # the kernel dropped the lock
    lock.let_go()
    assert path.read_text().strip() == str(holder.pid)  # kept for whoever cleans up
