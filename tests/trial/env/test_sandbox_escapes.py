"""The local env's sandbox against an adversarial solution (orchestrator.md §5.8).

Two concurrent oracle trials replay tests/fixtures/sandbox-escape.sh through the real agent tree:
it reads foreign /proc/*/environ, state.json and the jobs dir, logs into PostgreSQL by socket and
TCP, signals a process outside, forges a reward file in its trial directory, and leaves a `setsid` + `env -i` and a double-forked process
that post into the channel once the agents stop. In the bwrap sandbox every attempt fails and
nothing reaches the channel after the stop. The same script run on the host (what
`sandbox: none` gives an agent) shows the attempts are real: they succeed there.
"""

import asyncio
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from orchestra_run import orchestra_command, pids_in_namespace, task_copy

from orchestra.buzz import BuzzClient
from orchestra.config.task import load_task
from orchestra.documents.enums import SandboxKind
from orchestra.paths import PROJECT_ROOT
from orchestra.stack.state import load_state
from orchestra.trial.env.sandbox import sandbox_support
from orchestra.trial.identities import trial_user

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(
        sandbox_support().kind is not SandboxKind.BWRAP,
        reason=f"no sandbox on this machine: {sandbox_support().problem}",
    ),
]

ESCAPE = PROJECT_ROOT / "tests" / "fixtures" / "sandbox-escape.sh"
TASKS = ("reply-to-thread", "user-mention")
ATTEMPTS = ("foreign_environ", "state_json", "jobs_dir", "pg_socket", "pg_tcp", "signal_foreign")


@pytest.fixture
def decoy() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A process outside every sandbox holding a secret in its environment, as another
    trial's agent does: what the adversary reads and signals."""
    key = secrets.token_hex(32)
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={**os.environ, "BUZZ_PRIVATE_KEY": key},
    )
    yield process, key
    process.kill()
    process.wait()


def escape_script(*, state: Path, jobs: Path, socket_dir: Path, victim: int, key: str) -> str:
    text = ESCAPE.read_text(encoding="utf-8")
    for name, value in {
        "@STATE_DIR@": str(state),
        "@JOBS_DIR@": str(jobs),
        "@PG_SOCKET_DIR@": str(socket_dir),
        "@VICTIM_PID@": str(victim),
        "@DECOY_KEY@": key,
    }.items():
        text = text.replace(name, value)
    return text


def read_report(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_every_escape_fails_in_the_sandbox(
    relay_url: str, embedded_pg, tmp_path: Path, decoy
) -> None:
    victim, key = decoy
    state_dir, jobs_dir = tmp_path / "state", tmp_path / "jobs"
    script = escape_script(
        state=state_dir,
        jobs=jobs_dir,
        socket_dir=embedded_pg.server.socket_dir,
        victim=victim.pid,
        key=key,
    )
    dataset = tmp_path / "tasks"
    for name in TASKS:
        task_copy(dataset, name, solve=script)
    run = subprocess.run(
        orchestra_command(
            *("benchmark", "--path", str(dataset), "-k", "1", "-n", "2", "-q"),
            *("--stack", "external", "--relay-url", relay_url, "--env", "local"),
            *("--database-url", embedded_pg.new_database_url()),
            *("--jobs-dir", str(jobs_dir), "--state-dir", str(state_dir), "--job-name", "escape"),
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    job_ended = time.time()
    assert run.returncode in (0, 3), run.stdout + run.stderr  # the script solves nothing
    assert "unsandboxed" not in run.stderr
    trials = sorted(p.parent for p in (jobs_dir / "escape" / "escape").glob("*/result.json"))
    assert len(trials) == len(TASKS)
    for trial in trials:
        result = json.loads((trial / "result.json").read_text())
        assert result["sandbox"] == "bwrap" and result["status"] == "scored", result
        home = trial / "sandbox" / "root"
        report = read_report(home / "escape-report.txt")
        assert {
            attempt: report.get(attempt, "missing")[:7] for attempt in ATTEMPTS
        } == dict.fromkeys(ATTEMPTS, "blocked"), report
        assert report["survivors"].startswith("started"), report
        # write_outside may land in the sandbox's private /tmp (where pytest's trial directory
        # lies): what matters is that the host's trial directory never gets it
        assert "write_outside" in report
        assert not (trial / "verifier" / "forged-reward.json").exists()
        namespace = (home / "pid-namespace.txt").read_text().strip()
        assert namespace.startswith("pid:[")
        left = pids_in_namespace(namespace, started_before=job_ended)
        assert left == [], [Path(f"/proc/{pid}/stat").read_text()[:60] for pid in left]
        evidence = json.loads((trial / "agent" / "buzz" / "buzz-evidence.json").read_text())
        assert not [m for m in evidence["messages"] if "survivor" in m["content"]]
        channel = asyncio.run(channel_contents(state_dir, relay_url, trial, result))
        assert channel and not [content for content in channel if "survivor" in content]
    assert victim.poll() is None  # never signalled


async def channel_contents(state_dir: Path, relay_url: str, trial: Path, result: dict) -> list[str]:
    """The trial channel as the relay holds it after the job, read as its user."""
    state = load_state(state_dir, create=False)
    task = load_task(Path(json.loads((trial / "config.json").read_text())["task"]["dir"]))
    user = trial_user(
        owner_secret=state.owner.secret,
        user_secret=state.user.secret,
        short_name=task.short_name,
        user_display_name=task.fixture.user_display_name,
    )
    client = BuzzClient.from_keys(relay_url, user.keys)
    try:
        events = await client.messages_get(channel=result["buzz"]["channel_id"], limit=200)
    finally:
        await client.close()
    return [event["content"] for event in events]


def test_the_same_attempts_succeed_on_the_host(embedded_pg, tmp_path: Path, decoy) -> None:
    """What `sandbox: none` leaves an agent: the script run as a plain host process reads the
    decoy's key, state.json and the jobs dir, and signals the decoy. PostgreSQL still refuses
    it: the password is required on every socket, sandbox or not."""
    victim, key = decoy
    state_dir, jobs_dir = tmp_path / "state", tmp_path / "jobs"
    home = tmp_path / "trial" / "sandbox" / "root"  # as in a trial: <trial>/sandbox/root
    load_state(state_dir)
    (jobs_dir / "job" / "trial__aaaaaaa").mkdir(parents=True)
    (jobs_dir / "job" / "trial__aaaaaaa" / "result.json").write_text("{}")
    home.mkdir(parents=True)
    script = tmp_path / "escape.sh"
    script.write_text(
        escape_script(
            state=state_dir,
            jobs=jobs_dir,
            socket_dir=embedded_pg.server.socket_dir,
            victim=victim.pid,
            key=key,
        )
    )
    environment = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
        "BUZZ_CHANNEL_ID": "c" * 64,
        "BUZZ_PRIVATE_KEY": "1" * 64,
        "ESCAPE_NO_SURVIVORS": "1",
    }
    subprocess.run(["bash", str(script)], env=environment, check=True, timeout=120)
    report = read_report(home / "escape-report.txt")
    for attempt in ("foreign_environ", "state_json", "jobs_dir", "signal_foreign", "write_outside"):
        assert report[attempt].startswith("escaped"), report
    assert (home.parents[1] / "verifier" / "forged-reward.json").exists()
    assert report["pg_socket"] == "blocked (socket visible, login refused)", report
    assert report["pg_tcp"] == "blocked", report
    assert victim.wait(10) == -15  # the host process could signal it
