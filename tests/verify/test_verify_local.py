"""The local verifier runner: path mapping, reward reading and timeouts (orchestrator.md §9)."""

import json
import textwrap
from pathlib import Path

import pytest

from orchestra.paths import TrialPaths
from orchestra.verify.local import map_container_paths, run_local_verifier, shebang_command
from orchestra.verify.reward import (
    RewardFileEmpty,
    RewardFileNotFound,
    RewardParseError,
    VerifierReportedError,
    VerifierTimeout,
    read_rewards,
)

TEST_SH = textwrap.dedent(
    """\
    #!/bin/sh
    set -eu
    mkdir -p /logs/verifier
    python3 /tests/verify.py \\
      --evidence /logs/artifacts/buzz-evidence.json \\
      --skill-file /home/buzz/.claude/SKILL.md \\
      --reward /logs/verifier/reward.json \\
      --details /logs/verifier/details.json
    """
)


def test_mapping_is_one_pass_longest_prefix_first(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "job" / "t__abc")
    mapped = map_container_paths(TEST_SH, dict(trial.verifier_path_map("/home/buzz")))
    assert f"python3 {trial.tests_dir}/verify.py" in mapped
    assert f"--evidence {trial.artifacts_dir}/buzz-evidence.json" in mapped
    assert f"mkdir -p {trial.verifier_dir}\n" in mapped
    assert f"{trial.sandbox}/home/buzz/.claude/SKILL.md" in mapped
    # the host path of /tests itself contains "/tests": it must not be mapped again
    assert mapped.count(str(trial.tests_dir)) == 1


def test_mapping_respects_the_boundary_rule() -> None:
    mapping = {"/tests": Path("/host/tests")}
    assert map_container_paths('/testsuite /tests\' "/tests" /tests', mapping) == (
        '/testsuite /host/tests\' "/host/tests" /host/tests'
    )


def test_shebang() -> None:
    assert shebang_command("#!/usr/bin/env bash\n") == ["/usr/bin/env", "bash"]
    assert shebang_command("echo hi\n") == ["/bin/sh"]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"reward.json": '{"reward": 1, "x": 0.0}'}, {"reward": 1.0, "x": 0.0}),
        ({"reward.txt": " 0.5\n"}, {"reward": 0.5}),
        ({"reward.json": '{"reward": 1.0}', "reward.txt": "0"}, {"reward": 1.0}),
    ],
)
def test_read_rewards(tmp_path: Path, files: dict[str, str], expected: dict) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert read_rewards(tmp_path) == expected


@pytest.mark.parametrize(
    ("files", "error"),
    [
        ({}, RewardFileNotFound),
        ({"reward.json": ""}, RewardFileEmpty),
        ({"reward.txt": ""}, RewardFileEmpty),
        ({"reward.json": '{"reward": true}'}, RewardParseError),
        ({"reward.json": '{"reward": NaN}'}, RewardParseError),
        ({"reward.json": '{"x": 1.0}'}, RewardParseError),
        ({"reward.json": "[1]"}, RewardParseError),
        ({"reward.json": "{}"}, RewardParseError),
        ({"reward.json": "{bad", "reward.txt": "1"}, RewardParseError),  # no fallback
        ({"reward.txt": "inf"}, RewardParseError),
    ],
)
def test_reward_failures(tmp_path: Path, files: dict[str, str], error: type) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(error):
        read_rewards(tmp_path)


def _task_tests(tmp_path: Path, verify_body: str) -> Path:
    tests = tmp_path / "task" / "tests"
    tests.mkdir(parents=True)
    (tests / "test.sh").write_text(TEST_SH)
    (tests / "verify.py").write_text(
        "import argparse, json, sys, time\n"
        "p = argparse.ArgumentParser()\n"
        "for a in ('--evidence', '--skill-file', '--reward', '--details'): p.add_argument(a)\n"
        "args = p.parse_args()\n" + textwrap.dedent(verify_body)
    )
    return tests


async def test_run_local_verifier_scores(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "job" / "t__abc")
    trial.artifacts_dir.mkdir(parents=True)
    trial.artifacts_evidence_json.write_text('{"ok": true}')
    trial.verifier_dir.mkdir()
    (trial.verifier_dir / "reward.json").write_text('{"reward": 0.0}')  # stale, must go
    tests = _task_tests(
        tmp_path,
        """
        evidence = json.load(open(args.evidence))
        print("python", sys.executable)
        json.dump({"reward": 1.0 if evidence["ok"] else 0.0}, open(args.reward, "w"))
        json.dump({"skill": args.skill_file}, open(args.details, "w"))
        """,
    )
    run = await run_local_verifier(trial, "/home/buzz", tests, 30)
    assert run.rewards == {"reward": 1.0}
    assert run.summary() == {
        "exit_code": 0,
        "timed_out": False,
        "network": "not-isolated",
        "details_error": None,
    }
    details = json.loads(trial.details_json.read_text())
    assert details["skill"] == f"{trial.sandbox}/home/buzz/.claude/SKILL.md"
    assert (trial.tests_dir / "verify.py").exists()
    assert trial.test_local_sh.exists()
    assert "python" in trial.test_stdout.read_text()


async def test_details_error_is_a_verifier_reported_error(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "t")
    tests = _task_tests(
        tmp_path,
        """
        json.dump({"reward": 0.0}, open(args.reward, "w"))
        json.dump({"error": "evidence root is not an object"}, open(args.details, "w"))
        """,
    )
    with pytest.raises(VerifierReportedError) as caught:
        await run_local_verifier(trial, None, tests, 30)
    assert caught.value.rewards == {"reward": 0.0}
    assert caught.value.verifier["details_error"] == "evidence root is not an object"


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "t")
    tests = _task_tests(tmp_path, "time.sleep(60)\n")
    with pytest.raises(VerifierTimeout) as caught:
        await run_local_verifier(trial, None, tests, 0.5)
    assert caught.value.verifier["timed_out"] is True
