"""`orchestra export inspect`: the logs are read back with `inspect_ai`'s own
reader. On the shared oracle run (tests/export/conftest.py) every trial is a sample with its
rewards as scores and the harness error as the sample's error; on the recorded docker-env run
the messages and tool calls are the trajectory's; bad arguments are one-line errors."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from e2e.e2e_jobs import JobRun
from export_runs import ERROR_MESSAGE, ERROR_TRIAL
from inspect_ai.log import EvalLog, read_eval_log
from typer.testing import CliRunner

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.cli.main import app
from orchestra.documents.trial import TrialResult
from orchestra.paths import PROJECT_ROOT

RECORDED_RUN = PROJECT_ROOT / "tests" / "fixtures" / "docker-env-run"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["export", "inspect", *args])
    return result.exit_code, result.output


def export_logs(*args: str) -> list[EvalLog]:
    code, output = invoke(*args)
    assert code == 0, output
    paths = [Path(line.split(" ", 2)[1]) for line in output.splitlines()]
    assert {path.parent for path in paths} == {Path(args[-1])}
    assert sorted(p.name for p in Path(args[-1]).iterdir()) == sorted(p.name for p in paths)
    return [read_eval_log(str(path)) for path in paths]


@pytest.mark.e2e
@pytest.mark.slow
def test_every_trial_is_a_sample_with_its_scores_or_its_error(
    oracle_run: JobRun, scratch: Path
) -> None:
    (log,) = export_logs(str(oracle_run.run_dir), str(scratch / "inspect-logs"))
    ours = {p.name: TrialResult.load(p / "result.json") for p in oracle_run.job_dir.iterdir()
            if p.is_dir() and (p / "result.json").is_file()}  # fmt: skip
    assert log.status == "success" and log.eval.task == oracle_run.job_dir.name
    assert log.eval.model == "oracle/oracle-v1"
    assert log.samples is not None and len(log.samples) == len(ours) == 3
    by_trial = {sample.metadata["trial_name"]: sample for sample in log.samples}
    assert sorted(by_trial) == sorted(ours)
    for name, sample in by_trial.items():
        our = ours[name]
        assert (sample.id, sample.epoch, sample.uuid) == (our.task_name, our.attempt, our.trial_id)
        assert sample.started_at is not None and sample.total_time is not None
        if name == ERROR_TRIAL:
            assert sample.scores is None and sample.error is not None
            assert sample.error.message == f"AgentProcessExited: {ERROR_MESSAGE}"
            continue
        assert sample.error is None and sample.scores is not None and our.rewards is not None
        assert {key: score.value for key, score in sample.scores.items()} == our.rewards
        assert next(iter(sample.scores)) == "reward"
        assert our.tokens is not None
        (usage,) = sample.model_usage.values()
        assert (usage.input_tokens + (usage.input_tokens_cache_read or 0), usage.output_tokens) == (
            our.tokens.input,
            our.tokens.output,
        )
        assert isinstance(sample.input, str) and sample.input.startswith("@solo-1 ")
    assert log.results is not None
    assert (log.results.total_samples, log.results.completed_samples) == (2, 2)
    reward = log.results.scores[0]
    assert (reward.name, reward.scored_samples, reward.unscored_samples) == ("reward", 2, 1)
    assert reward.metrics["mean"].value == 1.0


def test_messages_and_tool_calls_are_the_trajectory_s(tmp_path: Path) -> None:
    run = shutil.copytree(RECORDED_RUN, tmp_path / "run")
    (log,) = export_logs(str(run / "docker-env"), str(tmp_path / "logs"))
    assert log.samples is not None and len(log.samples) == 2
    for sample in log.samples:
        trial = run / "docker-env" / sample.metadata["trial_name"]
        steps = Trajectory.model_validate_json(
            (trial / "agent" / "buzz" / "solo-1.trajectory.json").read_bytes()
        ).steps
        calls = [call for step in steps for call in step.tool_calls or []]
        replies = [m for m in sample.messages if m.role == "assistant"]
        assert len(replies) == sum(1 for step in steps if step.source == "agent")
        exported_calls = [call for m in replies for call in m.tool_calls or []]
        assert [(c.id, c.function, c.arguments) for c in exported_calls] == [
            (c.tool_call_id, c.function_name, c.arguments) for c in calls
        ]
        tools = [m for m in sample.messages if m.role == "tool"]
        assert [m.tool_call_id for m in tools] == [c.tool_call_id for c in calls]
        assert [m.role for m in sample.messages[:2]] == ["system", "user"]
        assert {(m.metadata or {}).get("agent_id") for m in sample.messages} == {"solo-1"}
        assert sample.scores is not None and sample.scores["reward"].answer
        kinds = [event.event for event in sample.events]
        assert kinds.count("model") == len(replies) and kinds.count("tool") == len(calls)
        assert (kinds[0], kinds[-1]) == ("span_begin", "span_end")
        assert all(event.uuid for event in sample.events)  # the viewer skips events without


def test_an_existing_log_is_kept_unless_forced_and_bad_arguments_are_one_line(
    tmp_path: Path,
) -> None:
    out = tmp_path / "logs"
    (first,) = export_logs(str(RECORDED_RUN), str(out))
    (log_file,) = out.iterdir()
    code, output = invoke(str(RECORDED_RUN), str(out))
    assert (code, output) == (
        1,
        f"error: {log_file}: exists (pass --force to replace the exported logs)\n",
    )
    (again,) = export_logs("--force", str(RECORDED_RUN), str(out))
    assert again.eval.eval_id == first.eval.eval_id
    code, output = invoke(str(out))
    assert code != 0 and "Missing argument 'RUN_OR_JOB...'" in output
    code, output = invoke(str(tmp_path), str(tmp_path / "other"))
    assert (code, output) == (1, f"error: {tmp_path}: neither a run nor a job directory\n")
    assert not (tmp_path / "other").exists()


def test_without_inspect_ai_the_command_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("orchestra.export.inspect_log", "orchestra.export.inspect_transcript"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    for module in [m for m in sys.modules if m.split(".")[0] == "inspect_ai"] + ["inspect_ai"]:
        monkeypatch.setitem(sys.modules, module, None)  # what an absent package imports as
    code, output = invoke(str(RECORDED_RUN), str(tmp_path / "logs"))
    assert (code, output) == (
        1,
        "error: orchestra export inspect needs inspect_ai (inspect_ai cannot be imported): "
        "pip install 'buzz-orchestra[inspect]'\n",
    )
    assert not (tmp_path / "logs").exists()
