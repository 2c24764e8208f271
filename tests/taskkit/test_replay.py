"""Replays go through `Run`: a run refused before any trial names how it ended and why."""

from __future__ import annotations

import socket
from pathlib import Path

from orchestra.taskkit.check import CheckOptions, check_tasks
from orchestra.taskkit.scaffold import scaffold
from orchestra.taskkit.stack import StackOptions, check_run, replay


def test_a_refused_replay_says_how_the_run_ended(tmp_path: Path) -> None:
    task_dir = tmp_path / "suite" / "ready-task"
    scaffold(task_dir, "regression")
    with socket.socket() as holder:  # the relay port is taken: preflight refuses (exit 2)
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        given = {"relay_port": port, "state_dir": tmp_path / "state"}
        options = StackOptions(tmp_path / "work", check_run(given))
        run = replay("oracle", {task_dir: task_dir / "solution" / "solve.sh"}, options)
        [check] = check_tasks([task_dir], CheckOptions(options))
    assert run.replays == {} and not run.outcome.ran
    assert run.why_no_trial().startswith(f"the run ended preflight: 127.0.0.1:{port} is in use")
    assert [problem.split(" (the run ended")[0] for problem in check.problems] == [
        f"{check.shown}: oracle solution: no trial ran",
        f"{check.shown}: negative solution {check.shown}/solution/negative.sh: no trial ran",
    ]
    assert all("--relay-port" in problem for problem in check.problems)
