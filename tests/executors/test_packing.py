"""Trial directories between a node and the driver (scale-out.md §5): packing with its size
limit, and the driver's atomic install with its checks."""

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from orchestra.documents.enums import ErrorType, TrialStatus
from orchestra.documents.trial import NodeRecord, TaskRecord, TrialIdentity, TrialResult
from orchestra.executors.install import InstallError, install_failure, install_trial
from orchestra.executors.packing import PackTooLarge, pack_directory, unpack_directory
from orchestra.paths import JobPaths

NODE = NodeRecord(node_id="ab" * 28, hostname="node-1")
TASK = TaskRecord(
    name="buzz-native/reply-to-thread",
    short_name="reply-to-thread",
    dir="/driver/tasks/reply-to-thread",
    layer="regression",
    digest="0" * 64,
)
IDENTITY = TrialIdentity(
    trial_id="t-1",
    trial_name="reply-to-thread__abcdefg",
    job_name="job",
    task_name=TASK.name,
    short_name=TASK.short_name,
    layer="regression",
    attempt=1,
    condition="oracle",
    manifest_sha256="1" * 64,
)
CONFIG = {
    "schema_version": 1, "trial_id": "t-1", "trial_name": IDENTITY.trial_name, "job_name": "job",
    "task": {**TASK.model_dump(), "dir": "/node/tasks/reply-to-thread"}, "attempt": 1,
    "condition": "oracle", "manifest_sha256": "1" * 64, "environment": "local",
    "timeouts": {"agent_seconds": 60.0, "verifier_seconds": 60.0}, "roster": [],
}  # fmt: skip


def node_trial(root: Path) -> tuple[Path, TrialResult]:
    """A finished trial directory as a node leaves it."""
    result = TrialResult.starting(IDENTITY, "2026-12-02T00:00:00.000000Z").model_copy(
        update={"status": TrialStatus.SCORED, "reward": 1.0}
    )
    trial = root / IDENTITY.trial_name
    (trial / "agent" / "buzz").mkdir(parents=True)
    (trial / "agent" / "buzz" / "solo-1.stdout.log").write_text("hello\n")
    (trial / "config.json").write_text(json.dumps(CONFIG))
    result.write(trial / "result.json")
    return trial, result


def test_a_directory_round_trips(tmp_path: Path) -> None:
    trial, _ = node_trial(tmp_path / "node")
    unpack_directory(pack_directory(trial), tmp_path / "back")
    files = {p.relative_to(trial).as_posix(): p.read_bytes() for p in trial.rglob("*") if p.is_file()}  # fmt: skip
    back = tmp_path / "back"
    assert {p.relative_to(back).as_posix(): p.read_bytes() for p in back.rglob("*") if p.is_file()} == files  # fmt: skip


def test_a_pack_past_the_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "noise.bin").write_bytes(os.urandom(256 * 1024))  # incompressible
    with pytest.raises(PackTooLarge):
        pack_directory(tmp_path, limit=64 * 1024)
    assert len(pack_directory(tmp_path)) > 64 * 1024


@pytest.fixture(params=["filters", "no filters"])
def extraction(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of unpacking: Python's `data` filter, and the checks of our own that stand in
    for it on Pythons before 3.11.4 (Debian bookworm's 3.11.2 has no extraction filters)."""
    if request.param == "no filters":
        monkeypatch.delattr(tarfile, "data_filter")
    return str(request.param)


def archive_of(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for info, content in members:
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def test_both_ways_of_unpacking_round_trip_a_trial(tmp_path: Path, extraction: str) -> None:
    trial, _ = node_trial(tmp_path / "node")
    (trial / "agent" / "link").symlink_to("buzz/solo-1.stdout.log")
    (trial / "run.sh").write_text("#!/bin/sh\n")
    (trial / "run.sh").chmod(0o4777)  # setuid and world-writable: both bits are dropped
    back = tmp_path / "back"
    unpack_directory(pack_directory(trial), back)
    assert (back / "agent" / "link").read_text() == "hello\n"
    assert (back / "agent" / "link").is_symlink()
    assert (back / "run.sh").stat().st_mode & 0o7777 == 0o755
    assert (back / "config.json").read_text() == (trial / "config.json").read_text()


def test_unpacking_refuses_a_path_that_leaves_the_target(tmp_path: Path, extraction: str) -> None:
    packed = archive_of((tarfile.TarInfo("../escaped.txt"), b"x"))
    with pytest.raises(tarfile.TarError, match="escaped.txt"):
        unpack_directory(packed, tmp_path / "target")
    assert not (tmp_path / "escaped.txt").exists()


@pytest.mark.parametrize("link", ["../../etc/passwd", "/etc/passwd"])
def test_unpacking_refuses_a_link_that_leaves_the_target(
    tmp_path: Path, extraction: str, link: str
) -> None:
    info = tarfile.TarInfo("agent/passwd")
    info.type, info.linkname = tarfile.SYMTYPE, link
    with pytest.raises(tarfile.TarError, match="passwd"):
        unpack_directory(archive_of((info, b"")), tmp_path / "target")
    assert not (tmp_path / "target" / "agent" / "passwd").is_symlink()


def test_unpacking_refuses_a_device(tmp_path: Path, extraction: str) -> None:
    info = tarfile.TarInfo("null")
    info.type = tarfile.CHRTYPE
    with pytest.raises(tarfile.TarError, match="null"):
        unpack_directory(archive_of((info, b"")), tmp_path / "target")


def test_install_puts_the_trial_in_place_with_its_node_and_the_drivers_task(
    tmp_path: Path,
) -> None:
    trial, result = node_trial(tmp_path / "node")
    job = JobPaths(tmp_path / "job")
    job.root.mkdir()
    final = install_trial(job, result, pack_directory(trial), TASK, NODE)
    installed = job.trial(IDENTITY.trial_name)
    assert final.node == NODE and final.status is TrialStatus.SCORED
    assert TrialResult.load(installed.result_json) == final
    assert json.loads(installed.config_json.read_text())["task"] == TASK.model_dump()
    assert (installed.root / "agent" / "buzz" / "solo-1.stdout.log").read_text() == "hello\n"
    assert not (job.root / ".incoming").exists()


def test_install_refuses_a_directory_whose_result_is_not_the_one_returned(
    tmp_path: Path,
) -> None:
    trial, result = node_trial(tmp_path / "node")
    job = JobPaths(tmp_path / "job")
    job.root.mkdir()
    other = result.model_copy(update={"reward": 0.0})
    with pytest.raises(InstallError, match="not the one returned"):
        install_trial(job, other, pack_directory(trial), TASK, NODE)
    assert not job.trial(IDENTITY.trial_name).root.exists()  # nothing half installed


def test_a_lost_trial_gets_a_directory_with_its_error(tmp_path: Path) -> None:
    job = JobPaths(tmp_path / "job")
    job.root.mkdir()
    latest = TrialResult.starting(IDENTITY, "2026-12-02T00:00:00.000000Z")
    message = "node node-1 (abababab) was lost with the trial in flight (ActorDiedError)"
    final = install_failure(job, latest, ErrorType.NODE_LOST, message, NODE)
    written = TrialResult.load(job.trial(IDENTITY.trial_name).result_json)
    assert written == final and written.status is TrialStatus.ERROR
    assert written.error_type == "NodeLost" and written.node == NODE
    assert written.exception_info is not None and written.exception_info.phase == "setup"
    assert message in job.trial(IDENTITY.trial_name).trial_log.read_text()
