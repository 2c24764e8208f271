"""The Ray node image (testbed/ray-node.Dockerfile, docs/scale-out.md) built from this checkout
and used as a real cluster: testbed/ray-node-check.sh starts a head and a worker container of
it, and the oracle suite must score 18/18 on the worker in bubblewrap sandboxes. The image's
Python is Debian bookworm's 3.11.2 (no tarfile extraction filters), and the nodes install the
wheel only, with no checkout."""

import os
import subprocess
import sys

import pytest

from orchestra.paths import PROJECT_ROOT

pytestmark = pytest.mark.docker


@pytest.mark.usefixtures("docker_engine")
def test_the_oracle_suite_scores_on_a_cluster_of_node_image_containers() -> None:
    done = subprocess.run(
        [str(PROJECT_ROOT / "testbed" / "ray-node-check.sh")],
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "2 of 2 slot(s) free, buzz-orchestra" in output
    assert "node image check: {('scored', 1.0, 'bwrap'): 18}" in output
