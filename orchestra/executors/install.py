"""Putting a trial that ran on a Ray node into the job directory (scale-out.md §5 step 3, §6).

The driver stays the only writer of the jobs directory: a returned trial directory is unpacked
into `<job>/.incoming/<trial>/`, checked (its `result.json` is the one the node returned), given
the driver's task record and the trial's `node`, then renamed into place, so a crash in between
leaves no half trial. A trial that came back without its directory (its node was lost, its
stack failed, its directory was too large) gets a directory holding the `result.json` the
driver writes for it.
"""

from __future__ import annotations

import contextlib
import os
import shutil

from orchestra.documents.enums import ErrorType, TrialStatus
from orchestra.documents.io import DocumentError
from orchestra.documents.trial import (
    ExceptionInfo,
    NodeRecord,
    TaskRecord,
    TrialConfig,
    TrialResult,
)
from orchestra.errors import TrialFailure
from orchestra.executors.packing import unpack_directory
from orchestra.jsonio import utc_timestamp
from orchestra.paths import JobPaths, TrialPaths


class InstallError(TrialFailure):
    """A returned trial directory that does not hold what its node returned: the trial ends
    in `InternalError`."""

    exception_type = ErrorType.INTERNAL_ERROR


def install_trial(
    paths: JobPaths,
    returned: TrialResult,
    packed: bytes,
    task: TaskRecord,
    node: NodeRecord,
) -> TrialResult:
    """The packed trial directory in place under the job; its final `result.json`."""
    name = returned.trial_name
    incoming = TrialPaths(paths.incoming(name))
    shutil.rmtree(incoming.root, ignore_errors=True)  # an earlier, interrupted install
    unpack_directory(packed, incoming.root)
    try:
        packed_result = TrialResult.load(incoming.result_json)
        config = TrialConfig.load(incoming.config_json)
    except DocumentError as error:
        raise InstallError(f"trial {name} came back without a readable record: {error}") from None
    if packed_result != returned:
        raise InstallError(f"trial {name}: the packed result.json is not the one returned")
    if (config.task.name, config.task.digest) != (task.name, task.digest):
        raise InstallError(f"trial {name} ran another task than {task.name}")
    # the trial ran the node's copy of the task; the job records the driver's
    config.model_copy(update={"task": task}).write(incoming.config_json)
    final = returned.model_copy(update={"node": node})
    final.write(incoming.result_json)
    _into_place(incoming, paths.trial(name))
    return final


def install_failure(
    paths: JobPaths,
    latest: TrialResult,
    error_type: ErrorType,
    message: str,
    node: NodeRecord | None,
) -> TrialResult:
    """Record a trial whose directory did not come back as `error` `error_type` (§6), from
    the latest result the driver saw of it; its final `result.json`."""
    now = utc_timestamp()
    info = ExceptionInfo(
        exception_type=error_type,
        exception_message=message,
        exception_traceback="",
        occurred_at=now,
        phase=latest.phase,
    )
    final = latest.model_copy(
        update={
            "status": TrialStatus.ERROR,
            "finished_at": now,
            "exception_info": info,
            "node": node or latest.node,
        }
    )
    name = latest.trial_name
    incoming = TrialPaths(paths.incoming(name))
    shutil.rmtree(incoming.root, ignore_errors=True)
    incoming.root.mkdir(parents=True)
    final.write(incoming.result_json)
    with incoming.trial_log.open("a", encoding="utf-8") as log:
        log.write(f"{now} error {error_type}: {message}\n")
    _into_place(incoming, paths.trial(name))
    return final


def _into_place(incoming: TrialPaths, target: TrialPaths) -> None:
    os.rename(incoming.root, target.root)
    with contextlib.suppress(OSError):  # `.incoming` goes when no other install is under way
        incoming.root.parent.rmdir()
