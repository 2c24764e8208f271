"""The parts of the Harbor export a solo oracle run does not reach: a team's trajectories, ids
that are not UUIDs, and the environment classes Harbor's `import_path` names."""

from __future__ import annotations

import importlib
import inspect
import uuid
from pathlib import Path

from documents_support import trial_result

from orchestra.documents.enums import EnvKind
from orchestra.documents.trial import RosterAgent
from orchestra.export.harbor import ENVIRONMENT_IMPORT_PATHS, as_uuid, copy_trajectories
from orchestra.paths import TrialPaths


def roster_agent(agent_id: str, kind: str) -> RosterAgent:
    return RosterAgent.model_validate(
        {"agent_id": agent_id, "class_id": agent_id.rpartition("-")[0], "kind": kind,
         "role": kind, "endpoint": "oracle", "model_revision": "oracle-v1"}
    )  # fmt: skip


def test_the_lead_trajectory_is_trajectory_json_and_teammates_are_side_files(
    tmp_path: Path,
) -> None:
    paths = TrialPaths(tmp_path / "trial")
    ids = ("lead-1", "worker-1", "worker-2")
    for agent_id in ids:
        paths.trajectory(agent_id).parent.mkdir(parents=True, exist_ok=True)
        paths.trajectory(agent_id).write_text(f'{{"agent": "{agent_id}"}}')
    trajectories = {i: str(paths.trajectory(i).relative_to(paths.root)) for i in ids}
    result = trial_result("d/task", trajectories=trajectories)
    out = tmp_path / "out" / "agent"
    out.parent.mkdir()
    copy_trajectories(paths, result, roster_agent("lead-1", "orchestrator"), out)
    assert (out / "trajectory.json").read_text() == '{"agent": "lead-1"}'
    side = {p.name: p.read_text() for p in (out / "trajectories").iterdir()}
    assert side == {
        "worker-1.json": '{"agent": "worker-1"}',
        "worker-2.json": '{"agent": "worker-2"}',
    }


def test_a_uuid_id_is_kept_and_any_other_id_becomes_a_stable_uuid() -> None:
    real = str(uuid.uuid4())
    assert as_uuid(real) == uuid.UUID(real)
    assert as_uuid("id-task-1") == as_uuid("id-task-1") != as_uuid("id-task-2")


def test_every_environment_kind_names_a_class_of_ours_that_imports() -> None:
    """Harbor's `import_path` for our environments must name classes that exist."""
    assert set(ENVIRONMENT_IMPORT_PATHS) == set(EnvKind)
    for kind, import_path in ENVIRONMENT_IMPORT_PATHS.items():
        module, _, name = import_path.partition(":")
        assert inspect.isclass(getattr(importlib.import_module(module), name)), kind
