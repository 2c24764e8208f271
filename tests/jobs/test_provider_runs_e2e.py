"""Real-model runs against fake providers: `orchestra benchmark` through the real
agent tree, a real relay and the local verifier, with a scripted OpenAI-compatible or
Anthropic-compatible server on 127.0.0.1 in place of the paid API.

Provider failures are errors (never a score of 0), a failing endpoint stops the run at
preflight, the circuit breaker stops a run whose provider died and `resume` finishes it, a
`Retry-After` is waited out, the cost cap stops the job, and `--retries` reruns a harness error.
"""

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import (
    DEFAULT_KEY,
    DEFAULT_MODEL,
    FakeLLM,
    RecordedRequest,
    Reply,
    anthropic_message,
    chat_text,
    chat_tool_call,
    error_reply,
    is_probe,
    llama_cpp_props,
    probe_tool_call,
)
from fake_provider import endpoints, manifest

from orchestra.agents.trajectory.atif import Trajectory
from orchestra.paths import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASK = PROJECT_ROOT / "tasks" / "buzz-native" / "user-mention"
#: No retries inside the agent tree: a provider failure gives the turn up at once.
NO_AGENT_RETRIES = {"BUZZ_AGENT_LLM_MAX_RETRIES": "0", "BUZZ_ACP_MAX_RETRIES": "0"}
RUN_SECONDS = 300


def orchestra(*args: str) -> list[str]:
    return [sys.executable, "-c", "from orchestra.cli.main import main; main()", *args]


class Run:
    """One scratch directory: a private task copy, jobs and state; `benchmark`/`resume`."""

    def __init__(self, root: Path, relay_url: str) -> None:
        self.root = root
        self.relay_url = relay_url
        self.task = root / "tasks" / TASK.name
        shutil.copytree(TASK, self.task, ignore=shutil.ignore_patterns("__pycache__"))
        self.jobs = root / "jobs"

    def stack_args(self) -> list[str]:
        return ["--stack", "external", "--relay-url", self.relay_url, "--env", "local"]

    def benchmark(
        self, manifest_path: Path, endpoint_path: Path, *extra: str, key: str = DEFAULT_KEY
    ) -> subprocess.CompletedProcess[str]:
        args = [
            "benchmark", "--path", str(self.task), "--manifest", str(manifest_path),
            "--endpoint-config", str(endpoint_path), "--artifact-root", str(PROJECT_ROOT),
            "--jobs-dir", str(self.jobs), "--state-dir", str(self.root / "state"),
            "--job-name", "job", "-n", "1", *self.stack_args(), *extra,
        ]  # fmt: skip
        return self._run(args, key)

    def resume(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self._run(["resume", str(self.job), *self.stack_args(), *extra], DEFAULT_KEY)

    def _run(self, args: list[str], key: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "FAKE_PROVIDER_KEY": key, "COLUMNS": "200"}
        return subprocess.run(
            orchestra(*args), capture_output=True, text=True, timeout=RUN_SECONDS, env=env
        )

    @property
    def run_dir(self) -> Path:
        """The run `--job-name job` names; it holds one job, its namesake."""
        return self.jobs / "job"

    @property
    def job(self) -> Path:
        return self.run_dir / "job"

    def results(self) -> list[dict[str, Any]]:
        return [
            json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(self.job.glob("*/result.json"))
        ]

    def job_result(self) -> dict[str, Any]:
        return json.loads((self.job / "result.json").read_text(encoding="utf-8"))

    def assert_no_key_on_disk(self) -> None:
        for path in self.root.rglob("*"):
            if path.is_file():
                assert DEFAULT_KEY.encode() not in path.read_bytes(), path


@pytest.fixture
def run(relay_url: str, tmp_path: Path) -> Iterator[Run]:
    yield Run(tmp_path, relay_url)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def output(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


def shell_results(run: Run, result: dict[str, Any]) -> list[str]:
    """The agent's ATIF trajectory (a valid one): what each shell call gave back."""
    trajectory = Trajectory.model_validate_json(
        (run.job / result["trial_name"] / result["trajectories"]["solo-1"]).read_bytes()
    )
    return [
        observed.content
        for step in trajectory.steps
        if step.tool_calls and step.observation
        for call, observed in zip(step.tool_calls, step.observation.results, strict=True)
        if call.function_name == "buzz_dev_mcp__shell"
    ]


def llm_calls(llm: FakeLLM) -> list[RecordedRequest]:
    """The agents' requests (not the endpoint check's probe)."""
    return [
        r
        for r in llm.requests
        if isinstance(r.body, dict) and r.body.get("tools") and not is_probe(r)
    ]


# --- a happy path on each provider ---------------------------------------------------------


def test_openai_compatible_happy_path_is_scored_after_the_probe(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    llm.script(
        probe_tool_call(),
        chat_tool_call("buzz_dev_mcp__shell", {"command": "echo checked"}),
    )
    done = run.benchmark(manifest(tmp_path / "m.yaml"), endpoints(tmp_path / "e.json", llm))
    assert done.returncode in (0, 3) and "endpoint check: fake-model answered" in done.stdout
    assert "fake-model: tool call, " in done.stdout and "warning" not in done.stderr
    probe = llm.requests[0]
    assert probe.path == "/v1/chat/completions" and is_probe(probe)
    assert probe.body["tool_choice"] == "required" and "reasoning_effort" not in probe.body
    assert probe.headers["authorization"] == f"Bearer {DEFAULT_KEY}"
    (result,) = run.results()
    assert result["status"] == "scored", output(done)
    assert result["exception_info"] is None and result["retried_from"] == []
    calls = llm_calls(llm)
    assert len(calls) == 2 and calls[1].body["messages"][-1]["role"] == "tool"
    assert "checked" in calls[1].body["messages"][-1]["content"]
    (shell,) = shell_results(run, result)
    assert "checked" in shell
    run.assert_no_key_on_disk()

    # the dry run's wall-time estimate: this job's output tokens per trial at the probe's speed
    llm.script(probe_tool_call())
    dry = check_endpoints(run, tmp_path / "m.yaml", tmp_path / "e.json")
    assert dry.returncode == 0, output(dry)
    output_tokens = result["tokens"]["output"]
    assert (
        f"for 1 trial(s), 4 at a time: {output_tokens:,} output tokens per trial (job job) at "
        in dry.stdout
    ), output(dry)


def test_anthropic_compatible_happy_path_is_scored(run: Run, llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(
        anthropic_message(
            [{"type": "tool_use", "id": "toolu_0", "name": "ping", "input": {"text": "pong"}}],
            stop_reason="tool_use",
        ),
        anthropic_message(
            [{"type": "tool_use", "id": "toolu_1", "name": "buzz_dev_mcp__shell",
              "input": {"command": "echo checked"}}],
            stop_reason="tool_use",
        ),
    )  # fmt: skip
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoints(tmp_path / "e.json", llm, "anthropic")
    )
    probe = llm.requests[0]
    assert probe.path == "/v1/messages" and is_probe(probe), output(done)
    assert probe.body["tool_choice"] == {"type": "any"}
    assert probe.headers["x-api-key"] == DEFAULT_KEY
    (result,) = run.results()
    assert result["status"] == "scored", output(done)
    calls = llm_calls(llm)
    assert calls[1].body["messages"][-1]["content"][0]["type"] == "tool_result"
    (shell,) = shell_results(run, result)
    assert "checked" in shell
    run.assert_no_key_on_disk()


# --- preflight -----------------------------------------------------------------------------


def test_a_refused_key_and_a_closed_port_stop_the_run_at_preflight(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    llm.script(error_reply(401, f"Incorrect API key provided: {DEFAULT_KEY}"))
    done = run.benchmark(manifest(tmp_path / "m.yaml"), endpoints(tmp_path / "e.json", llm))
    assert done.returncode == 2, output(done)
    assert done.stderr == (
        f"error: endpoint {DEFAULT_MODEL} ({llm.base_url}/v1/chat/completions): HTTP 401: "
        "Incorrect API key provided: [REDACTED]\n"
    )
    assert not run.jobs.exists() and len(llm.requests) == 1
    assert done.stdout == ""  # no run was announced: none was created

    closed = FakeLLM()
    closed.close()  # a port that nothing listens on any more
    done = run.benchmark(manifest(tmp_path / "m.yaml"), endpoints(tmp_path / "c.json", closed))
    assert done.returncode == 2, output(done)
    line = done.stderr.strip()
    assert line.startswith(
        f"error: endpoint {DEFAULT_MODEL} ({closed.base_url}/v1/chat/completions): "
        "llm_network_error: ConnectError"
    ), line
    assert "\n" not in line and not run.jobs.exists()

    checked = subprocess.run(
        orchestra(
            "benchmark", "--dry-run", "--check-endpoints", "--path", str(run.task),
            "--manifest", str(tmp_path / "m.yaml"), "--endpoint-config", str(tmp_path / "c.json"),
            "--artifact-root", str(PROJECT_ROOT), "--jobs-dir", str(run.jobs),
        ),
        capture_output=True, text=True, timeout=60, env={**os.environ, "FAKE_PROVIDER_KEY": "x"},
    )  # fmt: skip
    assert checked.returncode == 2 and "llm_network_error: ConnectError" in checked.stderr
    assert "Cost estimate  none" in checked.stdout and not run.jobs.exists()


def check_endpoints(
    run: Run, manifest_path: Path, endpoint_path: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """`benchmark --dry-run --check-endpoints`: the probe alone, no trial."""
    return subprocess.run(
        orchestra(
            "benchmark", "--dry-run", "--check-endpoints", "--path", str(run.task),
            "--manifest", str(manifest_path), "--endpoint-config", str(endpoint_path),
            "--artifact-root", str(PROJECT_ROOT), "--jobs-dir", str(run.jobs), *extra,
        ),
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "FAKE_PROVIDER_KEY": DEFAULT_KEY, "COLUMNS": "200"},
    )  # fmt: skip


def test_a_per_request_context_below_the_manifests_warns_and_strict_refuses(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """llama.cpp with `-c` split over its slots (4,096 per request) under a 200k manifest:
    a warning naming the fix; `--strict-endpoints` refuses (exit 2); the same server
    reporting 262,144: no warning, exit 0."""
    manifest_path = manifest(tmp_path / "m.yaml", context_window=200_000)
    endpoint_path = endpoints(tmp_path / "e.json", llm)
    llm.routes["/props"] = llama_cpp_props(4096)
    llm.script(probe_tool_call(), probe_tool_call())
    warned = check_endpoints(run, manifest_path, endpoint_path)
    assert warned.returncode == 0, output(warned)
    assert "fake-model: tool call, context 4,096 tokens per request" in warned.stdout
    (warning,) = [line for line in warned.stderr.splitlines() if line.startswith("warning:")]
    assert "gives one request 4,096 tokens of context" in warning and "200,000" in warning
    assert "--parallel" in warning
    assert (
        "Wall time estimate  none (no earlier job of this condition counted tokens); the endpoint check measured "
        in warned.stdout
    )

    strict = check_endpoints(run, manifest_path, endpoint_path, "--strict-endpoints")
    assert strict.returncode == 2, output(strict)
    assert "gives one request 4,096 tokens of context" in strict.stderr
    assert "--strict-endpoints" in strict.stderr

    llm.routes["/props"] = llama_cpp_props(262_144)
    llm.script(probe_tool_call())
    roomy = check_endpoints(run, manifest_path, endpoint_path, "--strict-endpoints")
    assert roomy.returncode == 0, output(roomy)
    assert "context 262,144 tokens per request" in roomy.stdout and "warning" not in roomy.stderr


def test_a_server_that_answers_in_text_or_cannot_parse_warns_with_the_fix(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    manifest_path = manifest(tmp_path / "m.yaml")
    endpoint_path = endpoints(tmp_path / "e.json", llm)
    llm.script(chat_text("Let me look into it."))
    text = check_endpoints(run, manifest_path, endpoint_path)
    assert text.returncode == 0, output(text)
    assert "fake-model: no tool call" in text.stdout
    assert "the model answered in text ('Let me look into it.')" in text.stderr
    assert "--jinja" in text.stderr and "--tool-call-parser" in text.stderr

    llm.script(
        error_reply(
            500, "The model produced output that does not match the expected peg-native format"
        )
    )
    unparsed = check_endpoints(run, manifest_path, endpoint_path, "--strict-endpoints")
    assert unparsed.returncode == 2, output(unparsed)
    assert "the server could not parse the model's reply" in unparsed.stderr
    assert "--jinja" in unparsed.stderr and "Traceback" not in unparsed.stderr


# --- during the run ------------------------------------------------------------------------


def test_a_refused_key_in_a_trial_is_an_error_not_a_zero(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """The issue's wrong-key run with the check skipped: the trial is `error`
    `ProviderAuthFailed` (never rerun: a refused key does not heal), the run stopped at once
    (exit 2), the provider's text in the message with the key it echoed redacted, and `<error>`
    in junit.xml."""
    llm.script(error_reply(401, f"Incorrect API key provided: {DEFAULT_KEY}"))
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoints(tmp_path / "e.json", llm),
        "--skip-endpoint-check", "--report",
    )  # fmt: skip
    assert done.returncode == 2, output(done)
    assert "ended in ProviderAuthFailed, which no retry or later trial can fix" in done.stdout
    (result,) = run.results()
    info = result["exception_info"]
    assert result["status"] == "error" and info["exception_type"] == "ProviderAuthFailed"
    assert info["exception_message"] == (
        f"endpoint {DEFAULT_MODEL} at {llm.base_url}/v1: HTTP 401: agent solo-1 gave up a turn: "
        "LLM call failed: HTTP 401: Incorrect API key provided: [REDACTED]"
    )
    assert result["reward"] is None and result["rewards"] is not None
    assert result["retried_from"] == [] and not (run.job / ".superseded").exists()
    assert len(llm_calls(llm)) == 1
    assert "the model provider failed: errors, not scores of 0" in done.stdout
    junit = (run.run_dir / "junit.xml").read_text(encoding="utf-8")
    assert '<error message="ProviderAuthFailed: endpoint' in junit and "<failure" not in junit
    run.assert_no_key_on_disk()


def test_an_empty_credit_balance_is_an_error_that_stops_the_run(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """Anthropic's "credit balance is too low" is a 400: an error (never a score of 0), and the
    run starts no further trial."""
    credit = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "Your credit balance is too low to access the Anthropic API.",
        },
    }
    llm.script(Reply(status=400, body=credit))
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"),
        endpoints(tmp_path / "e.json", llm, "anthropic"),
        "--skip-endpoint-check",
    )
    assert done.returncode == 2, output(done)
    (result,) = run.results()
    assert result["status"] == "error" and result["reward"] is None
    assert result["exception_info"]["exception_type"] == "ProviderBillingFailed"
    assert "credit balance is too low" in result["exception_info"]["exception_message"]
    assert len(llm.requests) == 1  # not retried by the agent, the bridge or the run


def test_a_provider_that_dies_trips_the_breaker_and_resume_finishes_the_job(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """Trial 1 scores; the server dies on trial 2's request; trials 2 and 3 are errors (not
    0), the breaker (2 in a row here) stops the run before trial 4; resume with the server
    back runs exactly the errored and unstarted trials."""
    llm.script(chat_text("done"), lambda _request: llm.go_down())
    endpoint_path = endpoints(tmp_path / "e.json", llm, **NO_AGENT_RETRIES)
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoint_path, "-k", "4", "--skip-endpoint-check",
        "--provider-error-limit", "2", "--retries", "0",
    )  # fmt: skip
    assert done.returncode == 2, output(done)
    results = sorted(run.results(), key=lambda r: r["attempt"])
    assert [(r["attempt"], r["status"]) for r in results] == [
        (1, "scored"), (2, "error"), (3, "error"),
    ], output(done)  # fmt: skip
    for errored in results[1:]:
        info = errored["exception_info"]
        assert info["exception_type"] == "ProviderUnavailable" and errored["reward"] is None
        assert info["exception_message"].startswith(
            f"endpoint {DEFAULT_MODEL} at {llm.base_url}/v1: llm_network_error: agent solo-1 "
        )
        assert errored["rewards"] is not None  # the verifier ran; kept, not counted
    job = run.job_result()
    assert job["stopped"] == "circuit_breaker" and job["finished_at"] is None
    assert "2 trials in a row ended in provider errors" in job["stop_message"]
    assert "stopped   circuit_breaker: 2 trials in a row" in done.stdout, output(done)
    assert "orchestra resume " in done.stderr and str(run.run_dir.name) in done.stderr
    assert "ProviderUnavailable: 2" in done.stdout

    scored_first = results[0]["trial_name"]
    with FakeLLM(port=int(llm.base_url.rsplit(":", 1)[1])):
        resumed = run.resume("--skip-endpoint-check")
    assert resumed.returncode == 0, output(resumed)
    after = run.results()
    assert len(after) == 4 and {r["status"] for r in after} == {"scored"}
    assert scored_first in {r["trial_name"] for r in after}
    superseded = sorted(p.name for p in (run.job / ".superseded").iterdir())
    assert superseded == sorted(r["trial_name"] for r in results[1:])
    assert run.job_result()["stopped"] is None and run.job_result()["stats"]["n_scored"] == 4
    run.assert_no_key_on_disk()


def test_a_429_with_retry_after_is_waited_out_and_scored(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    llm.script(error_reply(429, "slow down", retry_after="2"))
    endpoint_path = endpoints(tmp_path / "e.json", llm, BUZZ_AGENT_LLM_MAX_RETRIES="2")
    done = run.benchmark(manifest(tmp_path / "m.yaml"), endpoint_path, "--skip-endpoint-check")
    (result,) = run.results()
    assert result["status"] == "scored", output(done)
    first, second = llm_calls(llm)[:2]
    assert second.received_at - first.received_at >= 2.0
    events = (run.job / result["trial_name"] / "agent" / "buzz" / "solo-1.events.jsonl").read_text()
    assert '"turn_failed"' not in events
    # The agent's retry reaches the live progress through the event log.
    retrying = "retrying  buzz-native/user-mention #1 (provider HTTP 429, 1/"
    assert retrying in done.stdout, output(done)


def test_the_cost_cap_stops_the_job(run: Run, llm: FakeLLM, tmp_path: Path) -> None:
    """$10,000 per million tokens: one call of the fake's 110 tokens costs $1.10 > $0.50."""
    done = run.benchmark(
        manifest(tmp_path / "m.yaml", price_per_million=10_000),
        endpoints(tmp_path / "e.json", llm),
        "-k", "3", "--skip-endpoint-check", "--max-cost-usd", "0.5",
    )  # fmt: skip
    assert done.returncode == 2, output(done)
    (result,) = run.results()
    assert result["status"] == "scored" and result["cost_usd"] == pytest.approx(1.1)
    job = run.job_result()
    assert job["stopped"] == "cost_cap" and job["spent_usd"] == pytest.approx(1.1)
    assert job["stats"]["n_pending"] == 2
    assert "--max-cost-usd 0.5" in job["stop_message"]
    assert "stopped: cost_cap ($1.1000 spent)" in done.stdout

    estimate = subprocess.run(
        orchestra(
            "benchmark", "--dry-run", "--allow-missing-keys", "--path", str(run.task), "-k", "2",
            "--manifest", str(tmp_path / "m.yaml"), "--endpoint-config", str(tmp_path / "e.json"),
            "--artifact-root", str(PROJECT_ROOT), "--jobs-dir", str(run.jobs),
        ),
        capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )  # fmt: skip
    assert estimate.returncode == 0, output(estimate)
    assert (
        "Cost estimate  $2.2000 for 2 trial(s): $1.1000 per trial, the mean of 1 trial(s) of "
        "job job"
    ) in estimate.stdout


def test_a_hard_cost_cap_cancels_the_trial_in_flight(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """The first call's $1.10 passes the $0.50 cap while the agent still works (its next call
    would take a minute): the trial is cancelled and no other trial starts."""
    llm.script(
        chat_tool_call("buzz_dev_mcp__shell", {"command": "echo working"}),
        Reply(body=chat_text("done").body, delay=60),
    )
    done = run.benchmark(
        manifest(tmp_path / "m.yaml", price_per_million=10_000),
        endpoints(tmp_path / "e.json", llm),
        "-k", "2", "--skip-endpoint-check", "--max-cost-usd", "0.5", "--hard-cost-cap",
    )  # fmt: skip
    assert done.returncode == 2, output(done)
    (result,) = run.results()
    assert result["status"] == "cancelled", output(done)
    job = run.job_result()
    assert job["stopped"] == "cost_cap" and job["spent_usd"] == pytest.approx(1.1)
    assert job["stats"]["n_cancelled"] == 1 and job["stats"]["n_pending"] == 1


def test_retries_rerun_a_provider_error_once_and_supersede_it(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    llm.script(error_reply(503, "overloaded"))
    endpoint_path = endpoints(tmp_path / "e.json", llm, **NO_AGENT_RETRIES)
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoint_path, "--skip-endpoint-check", "--retries", "1"
    )
    assert done.returncode == 0, output(done)
    (result,) = run.results()
    assert result["status"] == "scored"
    (earlier,) = result["retried_from"]
    assert earlier["exception_type"] == "ProviderUnavailable"
    superseded = run.job / ".superseded" / earlier["trial_name"]
    first = json.loads((superseded / "result.json").read_text())
    assert first["status"] == "error" and "HTTP 503" in first["exception_info"]["exception_message"]
    assert "overloaded" in first["exception_info"]["exception_message"]
    job = run.job_result()
    assert [t["trial_name"] for t in job["trials"]] == [result["trial_name"]]
    assert job["stats"]["n_errors"] == 0 and job["finished_at"] is not None
    # The slot prints one `retrying` line for the failed attempt and one final line.
    lines = [line.split()[0] for line in done.stdout.splitlines() if "user-mention #1" in line]
    assert lines == ["started", "retrying", "scored"], output(done)


def test_output_the_server_cannot_parse_is_scored_and_never_trips_the_breaker(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """llama.cpp's 500 for a model reply it could not parse, on every request: the model's
    invalid action (agent-harness.md §2.4), so each trial is scored 0 and ends
    `invalid_output`; the breaker (2 in a row) never trips and every trial runs."""
    unparsable = error_reply(
        500, "The model produced output that does not match the expected peg-native format"
    )
    llm.script(*[unparsable] * 30)
    endpoint_path = endpoints(tmp_path / "e.json", llm, **NO_AGENT_RETRIES)
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoint_path, "-k", "3", "--skip-endpoint-check",
        "--provider-error-limit", "2", "--retries", "0",
    )  # fmt: skip
    assert done.returncode in (0, 3), output(done)
    results = run.results()
    assert len(results) == 3 and {r["status"] for r in results} == {"scored"}, output(done)
    for result in results:
        assert result["exception_info"] is None and result["reward"] == 0
        assert result["stop_reason"] == "invalid_output"
        assert "invalid-output" in result["flags"]
    assert run.job_result()["stopped"] is None
    # each trial: the first request and two corrective notes
    assert len(llm_calls(llm)) == 9


def test_a_server_that_only_answers_in_text_is_flagged_and_the_condition_warned(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """The stock chat template: the model answers in text and never calls a tool. Every
    trial is scored 0 with `no-tool-call` and `text-only` (orchestrator.md §10.3), the
    summary counts them and warns that the serving, not the model, is the likely cause."""
    llm.script(*[chat_text("Please provide the bash command you want to run.")] * 10)
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoints(tmp_path / "e.json", llm), "-k", "2",
        "--skip-endpoint-check",
    )  # fmt: skip
    assert done.returncode in (0, 3), output(done)
    results = run.results()
    assert [r["status"] for r in results] == ["scored", "scored"], output(done)
    for result in results:
        assert result["reward"] == 0 and result["flags"] == ["no-tool-call", "text-only"]
        (seat,) = result["buzz"]["agents"]
        assert seat["flags"] == ["no-tool-call", "text-only"] and seat["requests"] >= 1
    (layer,) = run.job_result()["aggregates"].values()
    assert layer["flags"] == {"no-tool-call": 2, "text-only": 2}
    assert "flags: no-tool-call×2, text-only×2" in done.stdout, output(done)
    assert "warning: no trial of this condition called a tool" in done.stdout, output(done)


# --- the smoke gate --------------------------------------------------------------------------


def test_the_smoke_gate_stops_a_dead_provider_before_the_plan(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """`--smoke` against a provider that is down: its one trial errors, the run exits 2 and
    no planned trial starts; the smoke trial is kept in `<run>/smoke/`."""
    closed = FakeLLM()
    closed.close()
    endpoint_path = endpoints(tmp_path / "c.json", closed, **NO_AGENT_RETRIES)
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoint_path, "-k", "2", "--smoke",
        "--skip-endpoint-check", "--retries", "0",
    )  # fmt: skip
    assert done.returncode == 2, output(done)
    assert "smoke trial" in done.stderr and "no planned trial was started" in done.stderr
    assert "ProviderUnavailable" in done.stderr, output(done)
    assert not list(run.job.glob("*/result.json"))  # no planned trial
    (smoke,) = (run.run_dir / "smoke").glob("*/result.json")
    assert json.loads(smoke.read_text(encoding="utf-8"))["status"] == "error"


def test_the_smoke_gate_passes_the_oracle_and_the_plan_runs(run: Run, tmp_path: Path) -> None:
    """With the oracle every seat acts: the gate prints the plan's extrapolated cost and
    time, and the plan runs; the smoke trial is not counted in the job's trials."""
    done = run.benchmark(
        PROJECT_ROOT / "manifests" / "buzz-native-solo-oracle.yaml",
        PROJECT_ROOT / "endpoints" / "oracle.json", "-k", "2", "--smoke",
    )  # fmt: skip
    assert done.returncode == 0, output(done)
    assert "smoke passed (" in done.stdout and "the plan's 2 trials: about $0.0000" in done.stdout
    assert [r["status"] for r in run.results()] == ["scored", "scored"]
    assert len(list((run.run_dir / "smoke").glob("*/result.json"))) == 1
    assert run.job_result()["n_planned"] == 2


# --- the do-nothing floor ------------------------------------------------------------------


@pytest.mark.parametrize(("task", "floor"), [("buzz-contracts/fyi-mention-silence", 1.0),
                                             ("buzz-native/user-mention", 0.0)])  # fmt: skip
def test_the_null_endpoint_scores_the_do_nothing_floor(
    relay_url: str, tmp_path: Path, task: str, floor: float
) -> None:
    """The built-in `null` endpoint answers every request with an empty end of turn: a
    silence contract passes doing nothing (its floor is 1.0), a task that needs an answer does
    not; either way the trial is flagged `no-tool-call`."""
    run = Run(tmp_path, relay_url)
    run.task = tmp_path / "tasks" / task
    shutil.copytree(PROJECT_ROOT / "tasks" / task, run.task, dirs_exist_ok=True)
    done = run.benchmark(
        PROJECT_ROOT / "manifests" / "buzz-native-solo-null.yaml",
        PROJECT_ROOT / "endpoints" / "null.json",
    )
    assert done.returncode == 0, output(done)
    (result,) = run.results()
    assert (result["status"], result["reward"]) == ("scored", floor), output(done)
    assert "no-tool-call" in result["flags"] and "text-only" not in result["flags"]


# --- looping -------------------------------------------------------------------------------

ECHO_30 = {"command": "echo 30"}


def test_five_identical_calls_in_a_row_are_flagged_looping(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """The model calls the shell with `echo 30` five times in a row, then ends its turn: the
    trial is scored and flagged `looping` (no limit was set, so every call ran)."""
    calls = [chat_tool_call("buzz_dev_mcp__shell", ECHO_30, f"call_{n}") for n in range(5)]
    llm.script(*calls, chat_text("done"))
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoints(tmp_path / "e.json", llm),
        "--skip-endpoint-check",
    )  # fmt: skip
    assert done.returncode in (0, 3), output(done)
    (result,) = run.results()
    assert result["status"] == "scored" and "looping" in result["flags"], output(done)
    assert len(llm_calls(llm)) == 6


def test_max_repeated_calls_ends_the_turn_at_the_limit(
    run: Run, llm: FakeLLM, tmp_path: Path
) -> None:
    """`--max-repeated-calls 3`: the third identical call ends the turn (scored); the model is
    not asked again."""
    calls = [chat_tool_call("buzz_dev_mcp__shell", ECHO_30, f"call_{n}") for n in range(6)]
    llm.script(*calls)
    done = run.benchmark(
        manifest(tmp_path / "m.yaml"), endpoints(tmp_path / "e.json", llm),
        "--skip-endpoint-check", "--max-repeated-calls", "3",
    )  # fmt: skip
    assert done.returncode in (0, 3), output(done)
    (result,) = run.results()
    assert result["status"] == "scored", output(done)
    assert len(llm_calls(llm)) == 3
    assert len(shell_results(run, result)) == 3  # the third call ran, then the turn ended
