"""A real cluster from `ray start --head` with Ray's token authentication on
(`RAY_AUTH_MODE=token`; the installed Ray 2.60 leaves it off unless asked): a driver without
the token is refused, and the error names the cause instead of Ray's bare "Failed to connect";
the same driver given the token joins (docs/scale-out.md §1)."""

import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from orchestra_run import PROJECT_ROOT, orchestra_command
from ray_cluster import free_port

pytestmark = pytest.mark.slow

HEAD_READY = "Ray runtime started."
HEAD_START_SECONDS = 120
CONNECT = (
    "from orchestra.executors.cluster import RayOptions, connect; "
    "connect(RayOptions(address={address!r})); print('joined')"
)


def token_env(token_path: Path) -> dict[str, str]:
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path)}


def without_token(home: Path) -> dict[str, str]:
    """This environment without any token Ray would find (`home` stands in for ~/.ray)."""
    names = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")
    return {k: v for k, v in os.environ.items() if k not in names} | {"HOME": str(home)}


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`ray start --head --block` in its own process group, with a token; stopped by signalling
    that group (never `ray stop`, which stops every Ray cluster of the machine)."""
    root = tmp_path_factory.mktemp("ray-token")
    token_path = root / "token"
    token_path.write_text(secrets.token_hex(32))
    port = free_port()
    ray = Path(sys.executable).parent / "ray"
    head = subprocess.Popen(
        [
            str(ray), "start", "--head", "--block", "--port", str(port), "--num-cpus", "1",
            "--include-dashboard", "false", "--temp-dir", f"/tmp/ray-token-{port}",
        ],
        env={**without_token(root), **token_env(token_path), "RAY_USAGE_STATS_ENABLED": "0"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    assert head.stdout is not None
    seen = []
    for line in head.stdout:  # the head says when it is up; no fixed wait
        seen.append(line)
        if HEAD_READY in line:
            break
    else:
        pytest.fail("ray start --head ended before it was up:\n" + "".join(seen))
    try:
        yield f"127.0.0.1:{port}", token_path
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        head.wait(timeout=HEAD_START_SECONDS)
        shutil.rmtree(f"/tmp/ray-token-{port}", ignore_errors=True)


def test_a_driver_without_the_token_is_told_the_cluster_wants_one(
    token_cluster: tuple[str, Path], tmp_path: Path
) -> None:
    address, _ = token_cluster
    task = PROJECT_ROOT / "tasks" / "buzz-native" / "user-mention"
    done = subprocess.run(
        orchestra_command(
            "benchmark", "--dry-run", "--path", str(task), "--executor", "ray",
            "--ray-address", address, "--jobs-dir", str(tmp_path / "jobs"),
        ),
        capture_output=True, text=True, timeout=HEAD_START_SECONDS, env=without_token(tmp_path),
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = (done.stdout + done.stderr).splitlines()
    (line,) = [line for line in lines if "cannot reach the Ray cluster" in line]
    assert f"cannot reach the Ray cluster at {address}: Failed to connect" in line
    assert "Ray token authentication" in line and "RAY_AUTH_MODE=token" in line
    assert "Traceback" not in done.stdout + done.stderr


def test_the_same_driver_with_the_token_joins(
    token_cluster: tuple[str, Path], tmp_path: Path
) -> None:
    address, token_path = token_cluster
    done = subprocess.run(
        [sys.executable, "-c", CONNECT.format(address=address)],
        capture_output=True, text=True, timeout=HEAD_START_SECONDS,
        env={**without_token(tmp_path), **token_env(token_path)},
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "joined", done.stderr
