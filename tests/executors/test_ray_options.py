"""`--executor ray`'s failures before anything starts (scale-out.md §1, §6): the extra missing
(exit 1, naming it), a cluster that cannot be reached (exit 2, naming the address), Ray options
without `--executor ray` (exit 1); and `import ray` nowhere but orchestra/executors."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ray_cluster import free_port

from orchestra.executors.cluster import SLOT_RESOURCE
from orchestra.executors.node_host import NODE_DIR_VARIABLE
from orchestra.paths import PROJECT_ROOT

TASK = PROJECT_ROOT / "tasks" / "buzz-native" / "reply-to-thread"


def orchestra(
    tmp_path: Path, *args: str, hide_ray: bool = False
) -> subprocess.CompletedProcess[str]:
    """`orchestra benchmark` in a fresh interpreter; `hide_ray`: as if the extra were not
    installed (importing `ray` fails)."""
    hide = "sys.modules['ray'] = None; " if hide_ray else ""
    code = (
        f"import sys; {hide}from orchestra.cli.main import main; sys.argv[0] = 'orchestra'; main()"
    )
    command = [
        sys.executable, "-c", code, "benchmark", "--path", str(TASK), "-k", "1",
        "--env", "local", "--jobs-dir", str(tmp_path / "jobs"),
        "--state-dir", str(tmp_path / "state"), *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_without_the_extra_the_command_names_it(tmp_path: Path) -> None:
    done = orchestra(tmp_path, "--executor", "ray", hide_ray=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: --executor ray needs the ray extra, which is not installed: "
        "pip install 'buzz-orchestra[ray]'"
    ]
    assert not (tmp_path / "jobs").exists()


def test_an_unreachable_cluster_is_a_preflight_failure_naming_it(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    done = orchestra(tmp_path, "--executor", "ray", "--ray-address", address)
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot reach the Ray cluster at {address}: "), line
    assert not list((tmp_path / "jobs").glob("*/*/*/result.json"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ray-address", "127.0.0.1:1"], "error: ray_address goes with executor ray"),
        (["--ray-slots-per-node", "2"], "error: ray_slots_per_node goes with executor ray"),
        (
            ["--executor", "ray", "--ray-address", "x:1", "--ray-slots-per-node", "2"],
            "error: ray_slots_per_node starts a local cluster; it cannot go with ray_address",
        ),
    ],
)
def test_ray_options_need_the_ray_executor(tmp_path: Path, args: list[str], message: str) -> None:
    done = orchestra(tmp_path, *args)
    assert done.returncode == 1 and done.stderr.strip() == message, done.stderr


def test_only_the_executors_folder_imports_ray() -> None:
    importers = []
    for path in sorted((PROJECT_ROOT / "orchestra").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )  # fmt: skip
            if any(name == "ray" or name.startswith("ray.") for name in names):
                importers.append(path.relative_to(PROJECT_ROOT).as_posix())
    assert importers and all(p.startswith("orchestra/executors/") for p in importers), importers


def test_the_kuberay_manifest_runs_slot_nodes_of_the_project_image() -> None:
    cluster = yaml.safe_load((PROJECT_ROOT / "testbed" / "kuberay-raycluster.yaml").read_text())
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    head = cluster["spec"]["headGroupSpec"]
    assert json.loads(json.loads(head["rayStartParams"]["resources"])) == {SLOT_RESOURCE: 0}
    [workers] = cluster["spec"]["workerGroupSpecs"]
    slots = json.loads(json.loads(workers["rayStartParams"]["resources"]))[SLOT_RESOURCE]
    assert slots >= 1
    images = {
        container["image"].rpartition("/")[2].partition(":")[0]
        for group in (head, workers)
        for container in group["template"]["spec"]["containers"]
    }
    assert images == {"buzz-orchestra-ray-node"}
    [container] = workers["template"]["spec"]["containers"]
    assert {"name": NODE_DIR_VARIABLE, "value": "/buzz-node"} in container["env"]
    dockerfile = (PROJECT_ROOT / "testbed" / "ray-node.Dockerfile").read_text()
    assert "'buzz-orchestra[ray]'" in dockerfile
