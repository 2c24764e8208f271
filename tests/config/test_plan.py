"""Task discovery, selection, layer planning and the dry-run text (orchestrator.md §2.3, §2.4)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestra.config.condition import load_condition
from orchestra.config.errors import ConfigError
from orchestra.documents.run_config import TaskSelection
from orchestra.jobs.plan import (
    dataset_dir,
    dataset_paths,
    discover_tasks,
    job_base_name,
    make_plan,
    render_dry_run,
)
from orchestra.paths import DEFAULT_DATASET

from .conftest import REPO, make_task

REGRESSION = [
    "memory-retrieval",
    "multiline-message",
    "narrative-agent-names",
    "read-named-path-outside-workspace",
    "reply-to-thread",
    "user-mention",
]
WORKFLOW = [
    "ambiguous-user-mention",
    "create-channel-invite-users",
    "cross-thread-requests",
    "interleaved-agent-reports",
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A copy of the buzz-native shape: 6 regression and 4 workflow tasks."""
    root = tmp_path / "buzz-native"
    for name in REGRESSION:
        make_task(root, name, "regression")
    for name in WORKFLOW:
        make_task(root, name, "workflow")
    return root


def plan_of(path: Path, attempts: int | None = None, **filters: object):
    return make_plan(TaskSelection(paths=[path], attempts=attempts, **filters), "base")


def shape(plan) -> list[tuple[str, str, int, list[str]]]:
    return [
        (job.name, job.layer, job.attempts, [t.short_name for t in job.tasks]) for job in plan.jobs
    ]


def errors_of(path: Path, attempts: int | None = None, **filters: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        plan_of(path, attempts, **filters)
    lines = [str(e) for e in caught.value.errors]
    assert all("\n" not in line for line in lines)
    return lines


# --- the specification's examples -------------------------------------------------------------


def test_dataset_root_plans_regression_then_workflow(dataset: Path) -> None:
    plan = plan_of(dataset)
    assert shape(plan) == [
        ("base-regression", "regression", 1, REGRESSION),
        ("base-workflow", "workflow", 3, WORKFLOW),
    ]
    assert plan.n_trials == 6 + 12


def test_layer_with_attempts_is_one_job(dataset: Path) -> None:
    assert shape(plan_of(dataset, 2, layer="workflow")) == [("base", "workflow", 2, WORKFLOW)]


def test_attempts_make_one_mixed_job(dataset: Path) -> None:
    plan = plan_of(dataset, 7)
    assert shape(plan) == [("base", "mixed", 7, sorted(REGRESSION + WORKFLOW))]
    assert plan.n_trials == 70


def test_single_task_uses_its_layer_default(dataset: Path) -> None:
    assert shape(plan_of(dataset / "cross-thread-requests")) == [
        ("base", "workflow", 3, ["cross-thread-requests"])
    ]
    assert shape(plan_of(dataset / "narrative-agent-names")) == [
        ("base", "regression", 1, ["narrative-agent-names"])
    ]


def test_include_glob_across_layers_gives_two_jobs(dataset: Path) -> None:
    assert shape(plan_of(dataset, include=("*mention*",))) == [
        ("base-regression", "regression", 1, ["user-mention"]),
        ("base-workflow", "workflow", 3, ["ambiguous-user-mention"]),
    ]


def test_layer_alone_uses_the_layer_default(dataset: Path) -> None:
    assert shape(plan_of(dataset, layer="regression")) == [("base", "regression", 1, REGRESSION)]


def test_slots_are_attempt_major(dataset: Path) -> None:
    [job] = plan_of(dataset, 2, include=("reply-*", "user-*")).jobs
    assert [(a, t.short_name) for a, t in job.slots()] == [
        (1, "reply-to-thread"),
        (1, "user-mention"),
        (2, "reply-to-thread"),
        (2, "user-mention"),
    ]


# --- globs ------------------------------------------------------------------------------------


def test_globs_match_full_name_or_basename_case_sensitively(tmp_path: Path) -> None:
    make_task(tmp_path, "alpha", name="suite/first")
    make_task(tmp_path, "beta", name="suite/second")
    names = lambda **f: [t.short_name for j in plan_of(tmp_path, 1, **f).jobs for t in j.tasks]  # noqa: E731
    assert names(include=("suite/first",)) == ["alpha"]  # full name
    assert names(include=("beta",)) == ["beta"]  # basename
    assert names(include=("suite/*",), exclude=("b*",)) == ["alpha"]
    assert names(exclude=("*/second",)) == ["alpha"]
    assert errors_of(tmp_path, include=("ALPHA",))[0].startswith("no tasks selected")


def test_include_that_matches_nothing_warns(dataset: Path) -> None:
    plan = plan_of(dataset, include=("user-mention", "nothing-*"))
    assert plan.warnings == ('include glob "nothing-*" matched no task',)


def test_filters_apply_layer_then_include_then_exclude(dataset: Path) -> None:
    # the include matches a regression task, but --layer removed it first
    plan = plan_of(dataset, layer="workflow", include=("*mention*",))
    assert shape(plan) == [("base", "workflow", 3, ["ambiguous-user-mention"])]
    assert plan.warnings == ()


def test_empty_selection_repeats_the_filters(dataset: Path) -> None:
    assert errors_of(dataset, layer="workflow", include=("reply-*",), exclude=("x",)) == [
        f'no tasks selected (path={dataset}, layer=workflow, include=["reply-*"], exclude=["x"])'
    ]
    assert errors_of(dataset, exclude=("*",)) == [
        f'no tasks selected (path={dataset}, layer=any, include=[], exclude=["*"])'
    ]


# --- discovery and validation ----------------------------------------------------------------


def test_discovery_skips_hidden_and_non_task_directories(tmp_path: Path) -> None:
    make_task(tmp_path, "b-task")
    make_task(tmp_path, "a-task")
    make_task(tmp_path, ".hidden")
    (tmp_path / "notes").mkdir()
    (tmp_path / "README.md").write_text("x")
    assert [t.short_name for t in discover_tasks(tmp_path)] == ["a-task", "b-task"]


def test_invalid_tasks_are_errors_never_skipped(tmp_path: Path) -> None:
    make_task(tmp_path, "good")
    bad = make_task(tmp_path, "bad", None, skip=("tests",))
    worse = make_task(tmp_path, "worse", "weekly")
    assert errors_of(tmp_path) == [
        f'{bad}/task.toml: [metadata].evaluation_layer must be "regression" or "workflow" (missing)',
        f"{bad}/tests/test.sh: missing (every task needs this file)",
        f'{worse}/task.toml: [metadata].evaluation_layer must be "regression" or "workflow" (got "weekly")',
    ]


def test_duplicate_task_names(tmp_path: Path) -> None:
    first = make_task(tmp_path, "one", name="buzz-native/x")
    second = make_task(tmp_path, "two", name="buzz-native/x")
    assert errors_of(tmp_path) == [f'duplicate task name "buzz-native/x" in {first} and {second}']


def test_missing_path_and_file_path(tmp_path: Path) -> None:
    assert errors_of(tmp_path / "nope") == [f"{tmp_path}/nope: does not exist"]
    (tmp_path / "file").write_text("x")
    assert errors_of(tmp_path / "file") == [f"{tmp_path}/file: is not a directory"]


def test_dataset_path_rules(tmp_path: Path) -> None:
    assert dataset_paths(TaskSelection()) == [DEFAULT_DATASET]
    assert dataset_paths(TaskSelection(paths=[tmp_path])) == [tmp_path]
    assert dataset_dir(str(tmp_path)) == tmp_path
    with pytest.raises(
        ConfigError, match="^registry datasets are not supported; pass a local directory$"
    ):
        dataset_dir("org/name@1")


# --- job names --------------------------------------------------------------------------------


def test_job_base_name() -> None:
    now = datetime(2026, 11, 29, 17, 42, 3, tzinfo=UTC)
    assert (
        job_base_name("buzz-native-solo-luna", None, now)
        == "buzz-native-solo-luna-20261129T174203Z"
    )
    assert job_base_name("c", "my.run_1", now) == "my.run_1"
    with pytest.raises(ConfigError, match=r'^--job-name "bad name" must match'):
        job_base_name("c", "bad name", now)


def test_longest_condition_still_gives_valid_two_job_names(dataset: Path) -> None:
    base = job_base_name("c" * 100, None, datetime(2026, 1, 1, tzinfo=UTC))
    plan = make_plan(TaskSelection(paths=[dataset]), base)
    assert [len(job.name) for job in plan.jobs] == [128, 126]


def test_too_long_job_name_with_layer_suffix_is_rejected(dataset: Path) -> None:
    with pytest.raises(ConfigError, match=r'^job name "a{128}-regression" must match'):
        make_plan(TaskSelection(paths=[dataset]), "a" * 128)


# --- records and dry run ----------------------------------------------------------------------


def test_plan_record(dataset: Path) -> None:
    [job] = plan_of(dataset / "user-mention").jobs
    record = job.plan_record()
    [task] = record.tasks
    assert record.layer == "regression" and record.attempts == 1
    assert task.name == "buzz-native/user-mention" and task.short_name == "user-mention"
    assert task.dir == (dataset / "user-mention").as_posix() and len(task.digest) == 64


def test_dry_run_text_names_everything_but_never_a_key_value(dataset: Path) -> None:
    condition = load_condition(
        REPO / "manifests/buzz-native-solo-luna.yaml", REPO / "endpoints/openai-live.json"
    )
    plan = plan_of(dataset, include=("*mention*", "zzz"))
    text = render_dry_run(
        plan,
        condition,
        stack_mode="embedded (auto: no Docker engine)",
        env_mode="local (auto)",
        environ={"OPENAI_API_KEY": "sk-secret-value"},
    )
    assert "sk-secret-value" not in text
    assert "07be27431590726ab20784c54bb554e59d0dcf2ccac019ed1897ad3c34791e31" in text
    assert "gpt-5.6-luna  provider=openai  API key from $OPENAI_API_KEY" in text
    assert "Stack      embedded (auto: no Docker engine)" in text
    assert "Job 1/2  base-regression  layer=regression  k=1  1 task × 1 = 1 trial" in text
    assert "Job 2/2  base-workflow  layer=workflow  k=3  1 task × 3 = 3 trials" in text
    assert "  buzz-native/ambiguous-user-mention  (workflow)" in text
    assert "Total: 2 jobs, 4 trials" in text
    assert text.endswith('warning: include glob "zzz" matched no task\n')
    assert "ORACLE" not in text


def test_dry_run_warns_about_missing_keys_and_flags_the_oracle(dataset: Path) -> None:
    luna = load_condition(
        REPO / "manifests/buzz-native-solo-luna.yaml", REPO / "endpoints/openai-live.json"
    )
    text = render_dry_run(plan_of(dataset), luna, stack_mode="s", env_mode="e", environ={})
    assert "API key $OPENAI_COMPAT_API_KEY NOT SET" in text
    assert "warning: $OPENAI_COMPAT_API_KEY is not set (endpoint gpt-5.6-luna)" in text
    oracle = load_condition(
        REPO / "manifests/buzz-native-solo-oracle.yaml", REPO / "endpoints/oracle.json"
    )
    text = render_dry_run(plan_of(dataset), oracle, stack_mode="s", env_mode="e", environ={})
    assert "ORACLE condition" in text and "oracle  provider=oracle  no API key" in text
    assert "warning" not in text


def test_the_shipped_dataset_plans_as_the_specification_says() -> None:
    """`just benchmark` against tasks/buzz-native: 6 tasks × 1, then 4 tasks × 3 (§2.3)."""
    plan = make_plan(TaskSelection(paths=[REPO / "tasks/buzz-native"]), "base")
    assert [(job.layer, len(job.tasks), job.attempts) for job in plan.jobs] == [
        ("regression", 6, 1),
        ("workflow", 4, 3),
    ]
