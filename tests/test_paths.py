"""orchestra.paths: the jobs-dir, state-dir and environment layouts of orchestrator.md."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from orchestra.paths import (
    CONTAINER_EVIDENCE,
    EnvPaths,
    JobPaths,
    StatePaths,
    TaskPaths,
    container_env_file,
    make_trial_name,
)


def test_trial_name_truncates_short_name_and_adds_base32_suffix() -> None:
    name = make_trial_name("x" * 40)
    assert re.fullmatch(r"x{32}__[a-z2-7]{7}", name)
    assert make_trial_name("reply-to-thread", "abcdefg") == "reply-to-thread__abcdefg"
    assert make_trial_name("a") != make_trial_name("a")  # fresh randomness each call


def test_job_and_trial_layout(tmp_path: Path) -> None:
    job = JobPaths.of(tmp_path / "jobs", "cond-20261129T174203Z")
    assert job.config_json == tmp_path / "jobs/cond-20261129T174203Z/config.json"
    assert job.result_json.name == "result.json" and job.job_log.name == "job.log"
    assert job.superseded("t__abcdefg") == job.root / ".superseded" / "t__abcdefg"
    trial = job.trial("t__abcdefg")
    assert trial.root == job.root / "t__abcdefg"
    buzz = trial.root / "agent" / "buzz"
    assert trial.system_prompt("solo-1") == buzz / "solo-1.system-prompt.md"
    assert trial.stdout_log("solo-1") == buzz / "solo-1.stdout.log"
    assert trial.stderr_log("solo-1") == buzz / "solo-1.stderr.log"
    assert trial.events_log("solo-1") == buzz / "solo-1.events.jsonl"
    assert trial.oracle_log == buzz / "oracle.jsonl"
    assert trial.evidence_json == buzz / "buzz-evidence.json"
    assert trial.transcript_json == buzz / "transcript.json"
    assert trial.evidence_error_txt == buzz / "buzz-evidence-error.txt"
    assert trial.fixture_file_record("/home/buzz/a/b.md") == buzz / "fixture-files/home/buzz/a/b.md"
    assert trial.reward_json == trial.root / "verifier/reward.json"
    assert trial.reward_txt == trial.root / "verifier/reward.txt"
    assert trial.details_json == trial.root / "verifier/details.json"
    assert trial.test_stdout == trial.root / "verifier/test-stdout.txt"
    assert trial.test_local_sh == trial.root / "verifier/test.local.sh"
    assert trial.artifacts_evidence_json == trial.root / "artifacts/buzz-evidence.json"
    assert trial.verifier_inputs_dir == trial.root / "verifier-inputs"
    assert (
        trial.verifier_input("/tests/verify.py") == trial.root / "verifier-inputs/tests/verify.py"
    )
    assert trial.sandbox == trial.root / "sandbox"


def test_state_dir_layout(tmp_path: Path) -> None:
    state = StatePaths(tmp_path / ".benchmark")
    assert state.state_json.name == "state.json"
    assert state.compose_env.name == ".env"
    assert state.wheelhouse("cp312-x86_64-glibc") == state.root / "wheelhouse/cp312-x86_64-glibc"
    assert state.embedded_pg == state.root / "embedded/pg"
    assert state.relay_log == state.root / "embedded/relay.log"
    assert state.relay_pid == state.root / "embedded/relay.pid"


def test_docker_env_paths() -> None:
    env = EnvPaths.docker(None)
    assert env.workspace == PurePosixPath("/workspace")
    assert env.home == PurePosixPath("/root")
    assert env.tmpdir is None
    assert env.system_prompt("solo-1") == PurePosixPath("/opt/buzz/prompts/solo-1.system-prompt.md")
    assert env.events_log("solo-1") == PurePosixPath("/opt/buzz/logs/solo-1.events.jsonl")
    assert env.solve_sh == PurePosixPath("/solution/solve.sh")
    assert env.solve_state_dir("c1") == PurePosixPath("/tmp/buzz-solve-c1")
    assert CONTAINER_EVIDENCE == PurePosixPath("/logs/artifacts/buzz-evidence.json")
    assert EnvPaths.docker("/home/buzz").fixture_file("/home/buzz/x") == PurePosixPath(
        "/home/buzz/x"
    )
    assert container_env_file("solo-1") == PurePosixPath("/opt/buzz/env/solo-1.env")


def test_local_env_maps_every_logical_path_into_the_trial(tmp_path: Path) -> None:
    trial = JobPaths(tmp_path / "job").trial("t__abcdefg")
    env = trial.local_env("/home/buzz")
    assert env.workspace == trial.sandbox / "workspace"
    assert env.home == trial.sandbox / "home/buzz"
    assert trial.local_env(None).home == trial.sandbox / "root"
    assert env.tmpdir == trial.sandbox / "tmp"
    assert env.system_prompt("solo-1") == trial.system_prompt("solo-1")
    assert env.events_log("solo-1") == trial.events_log("solo-1")
    assert env.logs_artifacts == trial.artifacts_dir
    assert env.solution == trial.sandbox / "solution"
    assert env.solve_state_dir("c1") == trial.sandbox / "tmp/buzz-solve-c1"
    assert env.fixture_file("/home/buzz/.claude/s.md") == trial.sandbox / "home/buzz/.claude/s.md"


def test_verifier_path_map_points_into_the_verifier_inputs_not_the_sandbox(
    tmp_path: Path,
) -> None:
    trial = JobPaths(tmp_path / "job").trial("t__abcdefg")
    mapping = trial.verifier_path_map("/home/buzz")
    prefixes = [prefix for prefix, _ in mapping]
    assert prefixes == sorted(prefixes, key=len, reverse=True)
    inputs = trial.root / "verifier-inputs"
    assert dict(mapping) == {
        "/logs/artifacts": inputs / "logs/artifacts",
        "/logs/verifier": trial.verifier_dir,
        "/logs/agent": inputs / "logs/agent",
        "/tests": inputs / "tests",
        "/solution": inputs / "solution",
        "/home/buzz": inputs / "home/buzz",
    }
    assert not any(trial.sandbox in path.parents for _, path in mapping)
    assert "/home/buzz" not in dict(trial.verifier_path_map(None))


def test_task_paths(tmp_path: Path) -> None:
    task = TaskPaths(tmp_path / "t")
    assert task.test_sh == tmp_path / "t/tests/test.sh"
    assert task.solve_sh == tmp_path / "t/solution/solve.sh"
    assert task.fixture_toml.name == "buzz-fixture.toml"
