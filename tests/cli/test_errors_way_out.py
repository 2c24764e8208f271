"""Errors with a way out, through the installed script: Docker wanted but no
daemon, an unknown stack, `cleanup` without Docker. DOCKER_HOST points at a socket that does not
exist, so no test here touches this machine's Docker engine."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestra.paths import PROJECT_ROOT
from orchestra.stack.images import ImageError, docker_client

ORCHESTRA = str(Path(sys.executable).parent / "orchestra")
NO_DAEMON = "unix:///nonexistent/docker.sock"
WAY_OUT = "(start Docker, or run without it: --stack embedded --env local)"


@pytest.fixture
def no_daemon(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("DOCKER_HOST", NO_DAEMON)
    return {**os.environ, "DOCKER_HOST": NO_DAEMON}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ORCHESTRA, *args], capture_output=True, text=True, timeout=120, env=env, cwd=PROJECT_ROOT
    )


@pytest.mark.parametrize(
    ("modes", "flag"),
    [
        (["--stack", "docker"], "--stack docker"),
        (
            ["--stack", "external", "--relay-url", "ws://127.0.0.1:9", "--env", "docker"],
            "--env docker",
        ),
    ],
)
def test_docker_without_a_daemon_is_one_line_with_the_way_out(
    no_daemon: dict[str, str], tmp_path: Path, modes: list[str], flag: str
) -> None:
    done = run(
        no_daemon, "benchmark", *modes, "-i", "user-mention", "--layer", "regression",
        "--jobs-dir", str(tmp_path / "jobs"), "--state-dir", str(tmp_path / "state"),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {flag} needs Docker: ") and line.endswith(WAY_OUT), line
    assert "Connection aborted" not in line and "Traceback" not in done.stderr
    assert not (tmp_path / "jobs").exists()


def test_the_docker_sdk_error_names_the_address_not_urllib3(no_daemon: dict[str, str]) -> None:
    with pytest.raises(ImageError) as caught:
        docker_client()
    assert str(caught.value) == (
        f"cannot reach the Docker engine at {NO_DAEMON}: is it running? "
        "(start Docker, or run without it: --stack embedded --env local)"
    )


def test_an_unknown_stack_lists_the_choices(tmp_path: Path) -> None:
    done = run(dict(os.environ), "stack", "up", "--stack", "bogus", "--state-dir", str(tmp_path))
    assert done.returncode == 1
    assert "'bogus' is not one of 'auto', 'docker', 'embedded', 'external'" in done.stderr
    assert "Traceback" not in done.stderr


def test_cleanup_kills_local_leftovers_when_docker_does_not_answer(
    no_daemon: dict[str, str], tmp_path: Path
) -> None:
    sandbox = tmp_path / "jobs" / "job-a" / "trial-1" / "sandbox"
    sandbox.mkdir(parents=True)
    leftover = subprocess.Popen(["sleep", "300"], env={**os.environ, "HOME": str(sandbox)})
    try:
        done = run(no_daemon, "cleanup", "--jobs-dir", str(tmp_path / "jobs"))
        assert done.returncode == 0, done.stderr
        assert done.stdout == "killed 1 leftover process(es)\n"
        assert done.stderr.startswith("note: containers not checked: ")
        assert leftover.wait(timeout=30) == -9  # SIGKILL, by cleanup
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()
