"""How the CLI tests run `orchestra benchmark`: one private task copy on the test relay."""

import shutil
import sys
from pathlib import Path

from orchestra.paths import PROJECT_ROOT

TASK = PROJECT_ROOT / "tasks" / "buzz-native" / "reply-to-thread"


def orchestra(*args: str) -> list[str]:
    return [sys.executable, "-c", "from orchestra.cli.main import main; main()", *args]


def benchmark_args(
    relay_url: str, database_url: str, tmp_path: Path, job: str, source: Path = TASK
) -> list[str]:
    # a private copy: other work on the dataset must not change the task digest under the test
    task = tmp_path / "tasks" / source.name
    if not task.exists():
        shutil.copytree(source, task, ignore=shutil.ignore_patterns("__pycache__"))
    return [
        "benchmark",
        "--stack",
        "external",
        "--relay-url",
        relay_url,
        "--database-url",
        database_url,
        "--env",
        "local",
        "--path",
        str(task),
        "--jobs-dir",
        str(tmp_path / "jobs"),
        "--state-dir",
        str(tmp_path / "state"),
        "-n",
        "1",
        "--job-name",
        job,
        "-q",
    ]
