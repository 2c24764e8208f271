"""Ctrl-C while the docker stack is still being built (its first run: pip fills the relay
image's wheelhouse) ends the run as an interruption, exit 130 with the resume line, not as a
stack failure: the terminal's SIGINT reaches pip too, and pip's failure is not the news."""

import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
from orchestra_run import orchestra_command, wait_until

pytestmark = pytest.mark.docker


def pip_child(parent: psutil.Process) -> psutil.Process | None:
    for child in parent.children(recursive=True):
        try:
            if "pip" in child.cmdline()[1:4]:
                return child
        except psutil.Error:
            continue
    return None


@pytest.mark.usefixtures("docker_engine")
def test_ctrl_c_while_the_stack_builds_is_an_interruption(tmp_path: Path) -> None:
    command = orchestra_command(
        "benchmark", "--env", "docker", "--state-dir", str(tmp_path / "state"),  # a cold wheelhouse
        "--jobs-dir", str(tmp_path / "jobs"), "-i", "user-mention", "-k", "1",
    )  # fmt: skip
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as process:
        try:
            pip = wait_until(lambda: pip_child(psutil.Process(process.pid)), 120, "pip running")
            os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
            stdout, stderr = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stdout + stderr
    assert "interrupted while the stack was starting; no trial ran" in stderr
    assert "the plan is not finished; to resume it:" in stderr
    assert "error:" not in stderr, stderr
    assert not psutil.pid_exists(pip.pid) or pip.status() == psutil.STATUS_ZOMBIE
