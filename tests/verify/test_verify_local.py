"""The local verifier runner: its world and environment, path mapping, reward reading and
timeouts (orchestrator.md §9)."""

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path, PurePosixPath

import pytest

from orchestra.config.manifest import ArtifactHashMismatch
from orchestra.config.task import TaskFile
from orchestra.paths import TrialPaths
from orchestra.verify.inputs import VerifierInputs
from orchestra.verify.local import map_container_paths, run_local_verifier, shebang_command
from orchestra.verify.outcome import VerifierRun
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
    inputs = trial.verifier_inputs_dir
    assert f"python3 {inputs}/tests/verify.py" in mapped
    assert f"--evidence {inputs}/logs/artifacts/buzz-evidence.json" in mapped
    assert f"mkdir -p {trial.verifier_dir}\n" in mapped
    assert f"{inputs}/home/buzz/.claude/SKILL.md" in mapped
    # the host path of /tests itself contains "/tests": it must not be mapped again
    assert mapped.count(f"{inputs}/tests") == 1
    assert str(trial.sandbox) not in mapped


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


SKILL = "/home/buzz/.claude/SKILL.md"


def _inputs(
    verify_body: str, *, evidence: bytes = b'{"ok": true}\n', skill: bytes = b"pristine\n"
) -> VerifierInputs:
    """The verifier's world for TEST_SH: evidence, tests/ (test.sh + a verify.py whose body is
    `verify_body`, with `args` parsed) and one fixture file at SKILL."""
    verify_py = (
        "import argparse, json, os, sys, time\n"
        "p = argparse.ArgumentParser()\n"
        "for a in ('--evidence', '--skill-file', '--reward', '--details'): p.add_argument(a)\n"
        "args = p.parse_args()\n" + textwrap.dedent(verify_body)
    )
    return VerifierInputs.assemble(
        evidence=evidence,
        tests=[
            TaskFile("test.sh", TEST_SH.encode(), 0o644),  # not executable: made so
            TaskFile("verify.py", verify_py.encode(), 0o644),
        ],
        fixture_files=[(SKILL, skill, 0o644)],
    )


async def _run(
    trial: TrialPaths, inputs: VerifierInputs, verifier_seconds: float = 30
) -> tuple[VerifierRun, list[str]]:
    notes: list[str] = []
    run = await run_local_verifier(trial, "/home/buzz", inputs, verifier_seconds, notes.append)
    return run, notes


SCORES_FROM_INPUTS = """
evidence = json.load(open(args.evidence))
skill = open(args.skill_file).read()
json.dump({"reward": 1.0 if evidence["ok"] and skill == "pristine\\n" else 0.0},
          open(args.reward, "w"))
json.dump({"skill": args.skill_file, "evidence": args.evidence}, open(args.details, "w"))
print("python", sys.executable)
"""


async def test_the_verifier_reads_only_the_inputs_written_for_it(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "job" / "t__abc")
    # what agents could have left: a rewritten fixture file, forged outputs and inputs
    sandbox_skill = trial.sandbox / SKILL.lstrip("/")
    sandbox_skill.parent.mkdir(parents=True)
    sandbox_skill.write_text("forged\n")
    trial.verifier_dir.mkdir(parents=True)
    (trial.verifier_dir / "reward.json").write_text('{"reward": 1.0}')
    (trial.verifier_dir / "reward.txt").write_text("1")
    planted = trial.verifier_input("/tests/verify.py")
    planted.parent.mkdir(parents=True)
    planted.write_text("print('forged')\n")
    trial.artifacts_dir.mkdir()
    trial.artifacts_evidence_json.write_text('{"ok": false}')  # not what the verifier reads

    run, notes = await _run(trial, _inputs(SCORES_FROM_INPUTS))

    assert run.rewards == {"reward": 1.0}
    assert run.summary().model_dump() == {
        "exit_code": 0,
        "timed_out": False,
        "network": "not-isolated",
        "details_error": None,
    }
    details = json.loads(trial.details_json.read_text())
    assert details["skill"] == str(trial.verifier_input(SKILL))
    assert details["evidence"] == str(trial.verifier_input("/logs/artifacts/buzz-evidence.json"))
    assert notes == [
        "removed 2 file(s) found before the verifier ran: verifier/reward.json, "
        "verifier/reward.txt",
        "removed 1 file(s) found before the verifier ran: verifier-inputs/tests/verify.py",
    ]
    assert os.access(trial.verifier_input("/tests/test.sh"), os.X_OK)
    assert trial.test_local_sh.exists()
    assert "python" in trial.test_stdout.read_text()


async def test_the_environment_is_rebuilt_from_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No PYTHON* variable, user site or site hook reaches verify.py; HOME is an empty
    directory; PATH is the interpreter shim, then the system's standard path only."""
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text("raise SystemExit('sitecustomize ran')\n")
    (planted / "startup.py").write_text("raise SystemExit('startup ran')\n")
    for name, value in {
        "PYTHONPATH": str(planted),
        "PYTHONSTARTUP": str(planted / "startup.py"),
        "PYTHONHOME": str(planted),
        "PYTHONSAFEPATH": "",
        "HOME": str(planted),
        "PATH": f"{planted}:{os.environ['PATH']}",
        "BUZZ_PRIVATE_KEY": "ff" * 32,
    }.items():
        monkeypatch.setenv(name, value)
    trial = TrialPaths(tmp_path / "t")
    run, _ = await _run(
        trial,
        _inputs(
            """
            home = os.environ["HOME"]
            facts = {
                "env": dict(os.environ),
                "flags": [sys.flags.isolated, sys.flags.no_site, sys.flags.no_user_site],
                "home_entries": os.listdir(home),
                "path0_is_script_dir": sys.path[0] == os.path.dirname(os.path.abspath(__file__)),
                "site_loaded": "site" in sys.modules,
            }
            json.dump({"reward": 1.0}, open(args.reward, "w"))
            json.dump(facts, open(args.details, "w"))
            """
        ),
    )
    assert run.rewards == {"reward": 1.0}
    facts = json.loads(trial.details_json.read_text())
    env = facts["env"]
    assert sorted(env) == ["HOME", "LANG", "PATH", "PWD"]  # PWD: set by sh itself
    assert env["LANG"] == "C.UTF-8"
    shim_dir, system = env["PATH"].split(os.pathsep, 1)
    assert system == os.confstr("CS_PATH") and str(planted) not in env["PATH"]
    assert "/orchestra-verifier-" in shim_dir and shim_dir.endswith("/bin")
    assert env["HOME"] != str(planted) and facts["home_entries"] == []
    assert facts["flags"] == [1, 1, 1]
    assert facts["path0_is_script_dir"] is False and facts["site_loaded"] is False


@pytest.fixture(scope="module")
def forging_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment of this interpreter whose site-packages holds a sitecustomize.py
    that forges a perfect reward after any verify.py: what an agent of the same OS user can
    plant in the orchestrator's own environment."""
    venv = tmp_path_factory.mktemp("forging") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site_packages] = venv.glob("lib/python*/site-packages")
    (site_packages / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            import atexit, sys
            def forge():
                if "--reward" in sys.argv:
                    path = sys.argv[sys.argv.index("--reward") + 1]
                    open(path, "w").write('{"reward": 1.0}')
            atexit.register(forge)
            """
        )
    )
    return venv / "bin" / "python"


async def test_a_sitecustomize_in_the_interpreters_site_packages_is_never_loaded(
    tmp_path: Path, forging_venv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    honest_zero = 'json.dump({"reward": 0.0}, open(args.reward, "w"))\n'
    # the attack works on a plain `python3 verify.py` of that interpreter ...
    script = tmp_path / "verify.py"
    script.write_text(_inputs(honest_zero).file(PurePosixPath("/tests/verify.py")).content.decode())
    reward = tmp_path / "reward.json"
    attack = await asyncio.create_subprocess_exec(
        forging_venv, script, "--reward", reward, stdin=asyncio.subprocess.DEVNULL
    )
    assert await attack.wait() == 0
    assert json.loads(reward.read_text()) == {"reward": 1.0}
    # ... and not on the verifier's
    monkeypatch.setattr(sys, "executable", str(forging_venv))
    trial = TrialPaths(tmp_path / "t")
    run, _ = await _run(trial, _inputs(honest_zero))
    assert run.rewards == {"reward": 0.0}


async def test_an_input_changed_while_the_verifier_ran_is_an_artifact_hash_mismatch(
    tmp_path: Path,
) -> None:
    trial = TrialPaths(tmp_path / "t")
    inputs = _inputs(
        """
        open(args.skill_file, "w").write("rewritten meanwhile\\n")
        json.dump({"reward": 1.0}, open(args.reward, "w"))
        """
    )
    with pytest.raises(ArtifactHashMismatch, match=f"changed while the verifier ran: {SKILL}"):
        await _run(trial, inputs)


async def test_details_error_is_a_verifier_reported_error(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "t")
    inputs = _inputs(
        """
        json.dump({"reward": 0.0}, open(args.reward, "w"))
        json.dump({"error": "evidence root is not an object"}, open(args.details, "w"))
        """
    )
    with pytest.raises(VerifierReportedError) as caught:
        await _run(trial, inputs)
    assert caught.value.rewards == {"reward": 0.0}
    assert caught.value.verifier.details_error == "evidence root is not an object"


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    trial = TrialPaths(tmp_path / "t")
    with pytest.raises(VerifierTimeout) as caught:
        await _run(trial, _inputs("time.sleep(60)\n"), verifier_seconds=0.5)
    assert caught.value.verifier.timed_out is True


async def test_a_crashed_verifier_is_explained_by_its_own_output(tmp_path: Path) -> None:
    """The error names the verifier's exit code and ends with its output."""
    trial = TrialPaths(tmp_path / "t")
    inputs = _inputs(
        """
        print("checking the evidence", flush=True)
        print("solver exploded: missing key 'messages'", file=sys.stderr)
        sys.exit(7)
        """
    )
    with pytest.raises(RewardFileNotFound) as caught:
        await _run(trial, inputs)
    message = str(caught.value)
    first, *rest = message.splitlines()
    assert first.startswith("no reward.json or reward.txt in ")
    assert first.endswith("; the verifier exited 7; the end of verifier/test-stdout.txt:")
    assert rest == ["  checking the evidence", "  solver exploded: missing key 'messages'"]
    assert caught.value.verifier.exit_code == 7
