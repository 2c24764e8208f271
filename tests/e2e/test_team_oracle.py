"""Teams end to end: the team oracle manifest (a lead and two workers) on the team
test task, through the installed `orchestra`, the real relay, three real agent trees, the
oracle's team protocol and the task's verifier, plus two variants of the roster: workers that
never answer (the trial times out and is scored 0) and a worker over its token budget.

Three `orchestra` runs, started together (each mostly waits on its agents)."""

import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_jobs import DATASET, JobRun
from orchestra_run import leftovers

from orchestra.paths import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TEAM_TASKS = PROJECT_ROOT / "tests" / "fixtures" / "team-tasks"
TASK = "team-delegation"
NATIVE_TASK = "user-mention"
TEAM_MANIFEST = PROJECT_ROOT / "manifests" / "buzz-native-team-oracle.yaml"
ORACLE_ENDPOINTS = PROJECT_ROOT / "endpoints" / "oracle.json"
AGENTS = ("lead-1", "worker-1", "worker-2")
PRICES = {
    "oracle": {
        "input_per_million_usd": 3.0,
        "cached_input_per_million_usd": 0.3,
        "output_per_million_usd": 15.0,
    },
    "oracle-worker": {
        "input_per_million_usd": 1.0,
        "cached_input_per_million_usd": 0.1,
        "output_per_million_usd": 5.0,
    },
}


def variant(scratch: Path, name: str, worker_faults: str, **changes: Any) -> tuple[Path, Path]:
    """The team manifest with the workers on an endpoint of their own (`worker_faults` as its
    ORACLE_FAULTS), priced, with `changes` applied to the worker entry / trial budget."""
    manifest = yaml.safe_load(TEAM_MANIFEST.read_text(encoding="utf-8"))
    manifest["condition"] = f"team-{name}"
    manifest["roster"][1]["endpoint"] = "oracle-worker"
    manifest["roster"][1].update(changes.get("worker", {}))
    manifest["trial_budget"].update(changes.get("trial_budget", {}))
    manifest["prices"] = PRICES
    manifest_path = scratch / f"team-{name}.yaml"
    manifest_path.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    endpoints = {
        "oracle": {"provider": "oracle", "env": {}},
        "oracle-worker": {"provider": "oracle", "env": {"ORACLE_FAULTS": worker_faults}},
    }
    endpoints_path = scratch / f"team-{name}-endpoints.json"
    endpoints_path.write_text(json.dumps(endpoints), encoding="utf-8")
    return manifest_path, endpoints_path


@pytest.fixture(scope="module")
def team_jobs(run_job, scratch: Path, relay_url: str, embedded_pg) -> dict[str, JobRun]:
    tasks = scratch / "team-tasks"
    shutil.copytree(TEAM_TASKS, tasks, ignore=shutil.ignore_patterns("__pycache__"))
    # Short, but long enough for the lead to delegate on a loaded machine: with 10 s (the
    # shortest agent timeout buzz-acp accepts) a lead still starting its buzz-agent under the
    # load of a parallel test run sometimes had not posted yet.
    silent = variant(scratch, "silent", "silent:1000", trial_budget={"timeout_seconds": 25})
    budget = variant(scratch, "budget", "", worker={"budget": {"max_output_tokens": 1}})
    native = scratch / "buzz-native-tasks"
    shutil.copytree(DATASET / NATIVE_TASK, native / NATIVE_TASK)
    conditions = {
        "team": (TEAM_MANIFEST, ORACLE_ENDPOINTS),
        "silent": silent,
        "budget": budget,
        "native": (TEAM_MANIFEST, ORACLE_ENDPOINTS),
    }

    def run(name: str) -> JobRun:
        manifest, endpoints = conditions[name]
        return run_job(
            native if name == "native" else tasks,
            f"team-{name}",
            *("--stack", "external", "--relay-url", relay_url),
            *("--database-url", embedded_pg.new_database_url()),
            *("--manifest", str(manifest), "--endpoint-config", str(endpoints)),
            *("--artifact-root", str(PROJECT_ROOT), "--report"),
        )

    with ThreadPoolExecutor(len(conditions)) as pool:
        return dict(zip(conditions, pool.map(run, conditions), strict=True))


def trial_of(job: JobRun, task: str = TASK) -> tuple[dict[str, Any], Path]:
    assert job.returncode == 0, job.output
    result = job.results[task]
    return result, job.job_dir / result["trial_name"]


def evidence_of(trial: Path) -> dict[str, Any]:
    evidence: dict[str, Any] = json.loads(
        (trial / "artifacts" / "buzz-evidence.json").read_text(encoding="utf-8")
    )
    return evidence


def events(trial: Path, agent_id: str) -> list[dict[str, Any]]:
    log = trial / "agent" / "buzz" / f"{agent_id}.events.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def pubkeys(result: dict[str, Any]) -> dict[str, str]:
    return {agent["agent_id"]: agent["pubkey"] for agent in result["buzz"]["agents"]}


def test_the_team_scores_one_and_the_leads_done_ends_the_trial(team_jobs) -> None:
    result, trial = trial_of(team_jobs["team"])
    assert (result["status"], result["reward"], result["stop_reason"]) == (
        "scored",
        1.0,
        "done_message",
    ), team_jobs["team"].output
    assert set(result["rewards"].values()) == {1.0}
    keys = pubkeys(result)
    evidence = evidence_of(trial)
    by_id = {message["id"]: message for message in evidence["messages"]}
    done = by_id[result["buzz"]["completion_message_id"]]
    assert done["pubkey"] == keys["lead-1"] and done["content"].startswith("DONE:")
    assert evidence["completion_message_id"] == done["id"]


def test_the_workers_delegated_work_and_its_done_are_in_the_transcript(team_jobs) -> None:
    """The worker answered the user and called the lead back with a `DONE:` of its own, which
    did not end the trial: the lead's later `DONE:` did."""
    result, trial = trial_of(team_jobs["team"])
    keys = pubkeys(result)
    user = result["buzz"]["user"]["pubkey"]
    messages = evidence_of(trial)["messages"]
    flow = [(m["pubkey"], m["mentioned_pubkeys"], m["content"][:5]) for m in messages]
    assert [(author, mentioned) for author, mentioned, _ in flow] == [
        (user, [keys["lead-1"]]),  # the task
        (keys["lead-1"], [keys["worker-1"]]),  # the delegation
        (keys["worker-1"], [user]),  # the worker's answer
        (keys["worker-1"], [keys["lead-1"]]),  # its callback
        (keys["lead-1"], [user]),  # the lead's DONE:
    ], flow
    assert flow[3][2] == flow[4][2] == "DONE:"
    assert "1,776" in messages[2]["content"]
    assert result["buzz"]["completion_message_id"] == messages[4]["id"]
    trajectory = json.loads((trial / result["trajectories"]["worker-1"]).read_text())
    commands = [
        call["arguments"]["command"]
        for step in trajectory["steps"]
        for call in step.get("tool_calls") or []
    ]
    assert any("solve.sh" in command for command in commands), commands


def test_workers_wake_only_on_mentions(team_jobs) -> None:
    """Every turn of every agent carries only events that p-tag it: worker-2, never
    mentioned, never ran a turn; worker-1 ran one, on the lead's delegation."""
    result, trial = trial_of(team_jobs["team"])
    keys = pubkeys(result)
    messages = {m["id"]: m for m in evidence_of(trial)["messages"]}
    turns = {
        agent_id: [r["event_ids"] for r in events(trial, agent_id) if r["event"] == "turn_started"]
        for agent_id in AGENTS
    }
    for agent_id, started in turns.items():
        for event_ids in started:
            assert all(keys[agent_id] in messages[e]["mentioned_pubkeys"] for e in event_ids)
    ordered = list(messages)
    assert turns == {
        "lead-1": [[ordered[0]], [ordered[3]]],
        "worker-1": [[ordered[1]]],
        "worker-2": [],
    }


def cost_of(used: dict[str, Any], endpoint: str) -> float:
    price = PRICES[endpoint]
    return (
        (used["input"] - used["cached_input"]) * price["input_per_million_usd"]
        + used["cached_input"] * price["cached_input_per_million_usd"]
        + used["output"] * price["output_per_million_usd"]
    ) / 1e6


def test_per_agent_accounting(team_jobs) -> None:
    """Tokens and cost per agent, each priced at its own endpoint; worker-2 never ran. Usage
    of a turn cut by a timeout or budget stop may be missing (no usage settle then, §7.2 step
    15), so amounts are required where they must exist: after the team's DONE:, the lead's
    delegation turn before the silent team's timeout, the worker's usage over its budget."""
    endpoints = {"lead-1": "oracle", "worker-1": "oracle-worker", "worker-2": "oracle-worker"}
    for name in ("team", "silent", "budget"):
        result, _ = trial_of(team_jobs[name])
        tokens = result["tokens"]
        per_agent = tokens["per_agent"]
        assert sorted(per_agent) == list(AGENTS), name
        assert per_agent["worker-2"] == {
            "input": 0,
            "cached_input": 0,
            "cache_write_input": 0,
            "output": 0,
            "turns": 0,
            "cost_usd": 0.0,
        }
        for agent_id in ("lead-1", "worker-1"):
            assert per_agent[agent_id]["turns"] >= 1, (name, agent_id)
        for key in ("input", "cached_input", "cache_write_input", "output"):
            assert tokens[key] == sum(agent[key] for agent in per_agent.values()), name
        total = sum(agent["cost_usd"] for agent in per_agent.values())
        assert result["cost_usd"] == pytest.approx(total), name
        if name != "team":  # priced: each agent at its endpoint's prices
            for agent_id, used in per_agent.items():
                expected = cost_of(used, endpoints[agent_id])
                assert used["cost_usd"] == pytest.approx(expected), (name, agent_id)
    team = trial_of(team_jobs["team"])[0]["tokens"]["per_agent"]
    assert team["lead-1"]["input"] > 0 and team["worker-1"]["input"] > 0
    assert trial_of(team_jobs["silent"])[0]["tokens"]["per_agent"]["lead-1"]["cost_usd"] > 0
    assert trial_of(team_jobs["budget"])[0]["tokens"]["per_agent"]["worker-1"]["cost_usd"] > 0


def test_a_team_whose_worker_never_answers_times_out_and_is_scored_zero(team_jobs) -> None:
    result, trial = trial_of(team_jobs["silent"])
    assert (result["status"], result["reward"], result["stop_reason"]) == (
        "scored",
        0.0,
        "timeout",
    ), team_jobs["silent"].output
    assert result["buzz"]["completion_message_id"] is None
    keys = pubkeys(result)
    authors = [m["pubkey"] for m in evidence_of(trial)["messages"]]
    assert keys["lead-1"] in authors and keys["worker-1"] not in authors
    woken = [r for r in events(trial, "worker-1") if r["event"] == "turn_started"]
    assert len(woken) == 1  # it was woken by the delegation, and said nothing


def test_a_worker_over_its_budget_stops_the_trial(team_jobs) -> None:
    result, _ = trial_of(team_jobs["budget"])
    assert (result["status"], result["stop_reason"]) == ("scored", "agent_budget")
    exceeded = result["budget_exceeded"]
    assert (exceeded["scope"], exceeded["agent_id"], exceeded["limit"]) == (
        "agent",
        "worker-1",
        "max_output_tokens",
    )
    assert exceeded["value"] > exceeded["max"] == 1


def test_every_system_prompt_has_the_team_block(team_jobs) -> None:
    result, trial = trial_of(team_jobs["team"])
    keys = pubkeys(result)
    roles = {"lead-1": "lead", "worker-1": "worker", "worker-2": "worker"}
    for agent_id in AGENTS:
        prompt = (trial / "agent" / "buzz" / f"{agent_id}.system-prompt.md").read_text()
        block = prompt[prompt.index("## Your team") :]
        rows = [
            f"| {other} | {roles[other]} | `{keys[other]}` |"
            for other in AGENTS
            if other != agent_id
        ]
        table = ["| Name | Role | Pubkey |", "|------|------|--------|", *rows]
        assert block.endswith("\n".join(table) + "\n"), block
        assert f"You are `{agent_id}` (pubkey `{keys[agent_id]}`)." in block


def test_every_agent_tree_is_gone_after_the_trial(team_jobs) -> None:
    for name, job in team_jobs.items():
        _, trial = trial_of(job, NATIVE_TASK if name == "native" else TASK)
        assert leftovers(trial) == [], name
        for agent_id in AGENTS:  # each buzz-acp was stopped by the trial, and ended cleanly
            assert events(trial, agent_id)[-1]["event"] == "shutdown", (name, agent_id)


def test_the_summary_and_the_report_show_each_agents_share_and_cost(team_jobs) -> None:
    """The lead and worker-1 wrote two messages each (half of what the agents wrote), worker-2
    none; the priced variant shows each agent's own cost."""
    job = team_jobs["team"]
    result, _ = trial_of(job)
    written = {agent["agent_id"]: agent["messages"] for agent in result["buzz"]["agents"]}
    assert written == {"lead-1": 2, "worker-1": 2, "worker-2": 0}
    requests = {agent["agent_id"]: agent["requests"] for agent in result["buzz"]["agents"]}
    for agent_id, role, count, share in (
        ("lead-1", "lead", 2, "50%"),
        ("worker-1", "worker", 2, "50%"),
        ("worker-2", "worker", 0, "0%"),
    ):
        line = (
            rf"^  {agent_id}\s+{role}\s+oracle\s+{count} msgs \({share}\)\s+\S+\s+\$0\.0000"
            rf"\s+{requests[agent_id]} requests?, \d+\.\ds$"
        )
        assert re.search(line, job.stdout, re.MULTILINE), job.stdout
        cells = (
            f"<td>{agent_id}</td><td>{role}</td><td>oracle</td>"
            f'<td class="num">{count}</td><td class="num">{share}</td>'
        )
        page = (job.run_dir / "report.html").read_text(encoding="utf-8")
        assert page.count(cells) == 2  # the condition's agents table and the trial's
    silent = team_jobs["silent"]
    result, _ = trial_of(silent)
    page = (silent.run_dir / "report.html").read_text(encoding="utf-8")
    for agent_id, used in result["tokens"]["per_agent"].items():
        cost = f"${used['cost_usd']:.4f}"
        line = rf"^  {agent_id}\s.*\s{re.escape(cost)}\s+\d+ requests?, \d+\.\ds(\s.*)?$"
        assert re.search(line, silent.stdout, re.MULTILINE), silent.stdout
        assert f"<td>{agent_id}</td>" in page and f'<td class="num">{cost}</td>' in page


def test_a_buzz_native_verifier_does_not_credit_the_workers_answer(team_jobs) -> None:
    """Why the team test task exists (docs/decisions.md D27): buzz-native verifiers score the
    orchestrator agent's own last message, so the team's work (the worker's correct answer to
    the user) scores 0 on them, and the trial is still `scored`, ended by the lead's DONE:."""
    result, trial = trial_of(team_jobs["native"], NATIVE_TASK)
    assert (result["status"], result["reward"], result["stop_reason"]) == (
        "scored",
        0.0,
        "done_message",
    )
    assert result["rewards"]["answer_correct"] == 0.0
    keys = pubkeys(result)
    answers = [m for m in evidence_of(trial)["messages"] if m["pubkey"] == keys["worker-1"]]
    assert "$5,328" in answers[0]["content"]
