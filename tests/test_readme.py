"""The README's examples run: every `just benchmark` line plans (dry run), and
the `buzz` walk-through works against a real embedded stack of its own."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from orchestra.paths import PROJECT_ROOT

BIN = Path(sys.executable).parent
README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")


def block_after(marker: str) -> list[str]:
    """The commands of the first ```bash block after `marker`: comments dropped, `\\` joined."""
    text = README[README.index(marker) :]
    body = text[text.index("```bash\n") + 8 : text.index("\n```", text.index("```bash\n"))]
    lines = re.sub(r"\\\n\s*", "", body).splitlines()
    return [re.sub(r"\s+#.*$", "", line).strip() for line in lines if line.strip()]


BENCHMARK_LINES = [line for line in block_after("## Running benchmarks") if "benchmark" in line]


@pytest.mark.parametrize("line", BENCHMARK_LINES)
def test_every_benchmark_example_plans(line: str, tmp_path: Path) -> None:
    args = shlex.split(line)
    assert args[:2] == ["just", "benchmark"], line
    env = {**os.environ, "OPENAI_COMPAT_API_KEY": "unused", "ANTHROPIC_API_KEY": "unused"}
    done = subprocess.run(
        [BIN / "orchestra", *args[1:], "--dry-run", "--stack", "embedded", "--env", "local",
         "--jobs-dir", str(tmp_path / "jobs"), "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Job 1/" in done.stdout and not (tmp_path / "jobs").exists()


def test_the_buzz_walk_through_reads_the_stack_as_the_user(tmp_path: Path, free_port: int) -> None:
    stack_options = f"--relay-port {free_port} --state-dir {tmp_path / 'state'}"
    script = ["set -euo pipefail"]
    for line in block_after("**Looking around the benchmark stack with `buzz`.**"):
        if "<" in line:  # a placeholder for a value of the reader's own
            continue
        if line.startswith("orchestra stack down"):
            line += f" --state-dir {tmp_path / 'state'}"
        line = line.replace("orchestra stack status", f"orchestra stack status {stack_options}")
        line = line.replace("--stack embedded", f"--stack embedded {stack_options}")
        script.append(line)
    assert any(line.startswith("buzz channels search") for line in script)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    env = {k: v for k, v in env.items() if not k.startswith("BUZZ_")}
    try:
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env,
        )  # fmt: skip
    finally:
        subprocess.run(
            [BIN / "orchestra", "stack", "down", "--state-dir", str(tmp_path / "state")],
            capture_output=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\n[]\n" in done.stdout  # the search ran, authenticated as the pinned user
    secret = (tmp_path / "state" / "state.json").read_text()
    assert re.search(r'"user_secret_key": "([0-9a-f]{64})"', secret)
    key = re.search(r'"user_secret_key": "([0-9a-f]{64})"', secret).group(1)
    assert key not in done.stdout + done.stderr  # the walk-through never prints the key
