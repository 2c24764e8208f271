"""The configuration's rough edges: why no task was found, "did you mean" for
a mistyped key, and `--artifact-root` suggested when a copied manifest's prompt paths fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from orchestra.config.condition import condition_problems, load_condition
from orchestra.config.endpoints import load_endpoint_config
from orchestra.config.errors import ConfigError
from orchestra.config.fixture import load_fixture
from orchestra.config.manifest import load_manifest
from orchestra.config.task import load_task
from orchestra.documents.run_config import TaskSelection
from orchestra.jobs.plan import PlanError, make_plan

from .conftest import LUNA_MANIFEST, REPO, make_task


def plan_error(path: Path, *include: str) -> str:
    with pytest.raises(PlanError) as caught:
        make_plan(TaskSelection(paths=[path], include=list(include)), "job")
    return str(caught.value)


# --- a. a task directory without task.toml ----------------------------------------------------


def test_a_task_directory_without_task_toml_names_the_missing_file(tmp_path: Path) -> None:
    task = make_task(tmp_path, "foo")
    (task / "task.toml").unlink()
    message = plan_error(task)
    assert message.startswith(f"no tasks selected (path={task}, ")
    assert f"{task}/task.toml: file not found" in message
    assert "\n" not in message


def test_a_dataset_without_any_task_toml_says_where_it_looked(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    message = plan_error(tmp_path)
    assert f"no task.toml in {tmp_path} or in any directory directly under it" in message


def test_an_include_glob_that_names_a_directory_without_task_toml_says_so(tmp_path: Path) -> None:
    make_task(tmp_path, "good")
    broken = make_task(tmp_path, "broken")
    (broken / "task.toml").unlink()
    message = plan_error(tmp_path, "broken")
    assert f"{broken}/task.toml: file not found" in message


# --- g. "did you mean" ------------------------------------------------------------------------


def manifest_problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_manifest(path)
    return [str(err).removeprefix(f"{path}: ") for err in caught.value.errors]


def test_a_mistyped_manifest_key_gets_did_you_mean(tmp_path: Path) -> None:
    data = yaml.safe_load(LUNA_MANIFEST)
    data["trial_budgte"] = data.pop("trial_budget")
    data["roster"][0]["generation"]["max_output_token"] = 10
    data["roster"][0]["prompt"]["sha"] = "x"
    data["prices"]["gpt-5.6-luna"]["output_per_milion_usd"] = 1.0
    data["bogus"] = 1
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    problems = manifest_problems(path)
    assert (
        'roster[0].generation.max_output_token: unknown key (did you mean "max_output_tokens"?)'
        in problems
    )
    assert 'trial_budgte: unknown key (did you mean "trial_budget"?)' in problems
    assert 'prices.gpt-5.6-luna.output_per_milion_usd: unknown key (did you mean "output_per_million_usd"?)' in problems  # fmt: skip
    assert 'roster[0].prompt.sha: unknown key (did you mean "sha256"?)' in problems
    assert "bogus: unknown key" in problems  # nothing close: no guess


def test_a_mistyped_endpoint_key_gets_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "ep.json"
    data = {"x": {"provider": "openai", "api_key_env": "K", "base_ulr": "http://h"}}
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_endpoint_config(path)
    assert f'{path}: x.base_ulr: unknown key (did you mean "base_url"?)' in str(caught.value)


def test_mistyped_task_toml_and_fixture_keys_get_did_you_mean(tmp_path: Path) -> None:
    task = make_task(tmp_path, "foo", fixture="schema_version = 1\n[[memory_seed]]\nkey = 'k'\n")
    text = (task / "task.toml").read_text().replace("[verifier]", "[verifeir]")
    (task / "task.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_task(task)
    assert f'{task}/task.toml: verifeir: unknown key (did you mean "verifier"?)' in str(
        caught.value
    )
    with pytest.raises(ConfigError) as caught:
        load_fixture(task)
    assert 'memory_seed: unknown key (did you mean "memory_seeds"?)' in str(caught.value)


# --- i. a copied manifest ---------------------------------------------------------------------


def test_a_copied_manifest_suggests_artifact_root(tmp_path: Path) -> None:
    copied = tmp_path / "elsewhere" / "m.yaml"
    copied.parent.mkdir()
    shutil.copy(REPO / "manifests/buzz-native-solo-oracle.yaml", copied)
    condition = load_condition(copied, REPO / "endpoints/oracle.json", verify=False)
    (problem,) = condition_problems(condition)
    assert "roster[0].prompt.path: file not found" in str(problem)
    assert str(problem).endswith(
        f"(the artifact root is {tmp_path}, the parent of the manifest's directory; "
        "pass --artifact-root DIR for a manifest copied out of its repository)"
    )
    assert "\n" not in str(problem)
