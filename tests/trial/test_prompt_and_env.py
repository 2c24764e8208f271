"""System-prompt composition (§7.8) and the agent environment (§4.2, §7.9)."""

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from orchestra.agents.acp.config import load_config as load_acp_config
from orchestra.config.endpoints import Endpoint
from orchestra.config.manifest import ArtifactHashMismatch, RosterEntry
from orchestra.trial.launch import (
    AgentLaunchSpec,
    OracleAccess,
    agent_environment,
    endpoint_variables,
)
from orchestra.trial.prompts import TeamMember, compose_roster_prompt


def artifact(root: Path, name: str, text: str) -> dict:
    (root / name).write_text(text)
    return {"path": name, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def entry(root: Path, **overrides: object) -> RosterEntry:
    data = {
        "id": "lead",
        "kind": "orchestrator",
        "role": "lead",
        "count": 1,
        "endpoint": "m",
        "model_revision": "m-1",
        "prompt": artifact(root, "prompt.md", "# Prompt"),
    }
    data.update(overrides)
    return RosterEntry.model_validate(data)


def test_team_prompt_layers_and_table(tmp_path: Path) -> None:
    roster = entry(
        tmp_path,
        persona=artifact(tmp_path, "persona.md", "Persona\n"),
        skills=[artifact(tmp_path, "triage.md", "Skill body")],
    )
    team = [TeamMember("lead-1", "lead", "aa" * 32), TeamMember("worker-1", "critic", "bb" * 32)]
    text = compose_roster_prompt(
        roster,
        tmp_path,
        me=team[0],
        team=team,
        channel_id="chan",
        user_name="Maya Elise Chen",
        user_pubkey="cc" * 32,
    )
    assert text == (
        "# Prompt\nPersona\n\n## Skill: triage\n\nSkill body\n\n## Your team\n\n"
        f"You are `lead-1` (pubkey `{'aa' * 32}`).\n"
        "The team coordinates in Buzz channel `chan`.\n"
        f"Tasks come from the user `Maya Elise Chen` (pubkey `{'cc' * 32}`); "
        "address your final report to them.\n\n"
        "| Name | Role | Pubkey |\n|------|------|--------|\n"
        f"| worker-1 | critic | `{'bb' * 32}` |\n"
    )


def test_solo_prompt_and_hash_check(tmp_path: Path) -> None:
    roster = entry(tmp_path)
    me = TeamMember("solo-1", "solo", "aa" * 32)
    text = compose_roster_prompt(
        roster, tmp_path, me=me, team=[me], channel_id="c", user_name="user", user_pubkey="cc" * 32
    )
    assert text.endswith("\nYou have no teammates in this trial.\n")
    (tmp_path / "prompt.md").write_text("# Edited")
    with pytest.raises(ArtifactHashMismatch):
        compose_roster_prompt(
            roster,
            tmp_path,
            me=me,
            team=[me],
            channel_id="c",
            user_name="user",
            user_pubkey="cc" * 32,
        )


def spec(tmp_path: Path) -> AgentLaunchSpec:
    return AgentLaunchSpec(
        relay_url="ws://localhost:3600",
        secret_hex="11" * 32,
        channel_id="chan",
        programs_dir=tmp_path / "bin",
        system_prompt_file="/p.md",
        event_log_file="/e.jsonl",
        trajectory_log_file="/t.jsonl",
        home="/sandbox/root",
        tmpdir="/sandbox/tmp",
        path="/usr/bin",
        agent_timeout_seconds=299.5,
    )


def test_agent_environment(tmp_path: Path) -> None:
    roster = entry(
        tmp_path,
        include_platform_prompt=False,
        concurrency=1,
        generation={"max_output_tokens": 4096, "extra": {"FEATURE_X": True, "LEVEL": 2}},
    )
    endpoint = Endpoint.model_validate(
        {
            "provider": "openai",
            "api_key_env": "MY_KEY",
            "base_url": "http://127.0.0.1:8091/v1",
            "env": {"OPENAI_COMPAT_API": "chat"},
        }
    )
    env = agent_environment(
        roster, endpoint_variables("m", endpoint, api_key="sk-1", oracle=None), spec(tmp_path)
    )
    assert env["MY_KEY"] == env["OPENAI_COMPAT_API_KEY"] == "sk-1"
    assert env["OPENAI_COMPAT_BASE_URL"] == "http://127.0.0.1:8091/v1"
    assert env["BUZZ_AGENT_PROVIDER"] == "openai" and env["BUZZ_AGENT_MODEL"] == "m"
    assert env["FEATURE_X"] == "true" and env["LEVEL"] == "2"
    assert env["BUZZ_ACP_MAX_TURN_DURATION"] == "300" and env["BUZZ_ACP_IDLE_TIMEOUT"] == "299"
    assert env["BUZZ_ACP_NO_BASE_PROMPT"] == "true"
    assert env["BUZZ_AGENT_THINKING_EFFORT"] == "medium"
    assert env["BUZZ_AGENT_MAX_ROUNDS"] == "0" and env["BUZZ_AGENT_NO_HINTS"] == "1"
    assert env["BUZZ_AGENT_MAX_OUTPUT_TOKENS"] == "4096"
    assert "BUZZ_AGENT_MAX_CONTEXT_TOKENS" not in env
    assert env["BUZZ_ACP_AGENT_COMMAND"] == str(tmp_path / "bin" / "buzz-agent")
    assert env["BUZZ_ACP_SUBSCRIBE"] == "mentions" and env["BUZZ_ACP_RESPOND_TO"] == "anyone"
    assert env["TMPDIR"] == "/sandbox/tmp" and env["HOME"] == "/sandbox/root"
    assert env["BUZZ_ACP_EVENT_LOG"] == "/e.jsonl"
    assert env["BUZZ_AGENT_TRAJECTORY_LOG"] == "/t.jsonl"


def test_oracle_endpoint_variables() -> None:
    endpoint = Endpoint.model_validate(
        {"provider": "oracle", "env": {"ORACLE_FAULTS": "429:1", "EXTRA": "x"}}
    )
    env = endpoint_variables(
        "oracle",
        endpoint,
        api_key=None,
        oracle=OracleAccess("http://127.0.0.1:5555/v1", "oracle-12345678-solo-1"),
    )
    assert env == {
        "BUZZ_AGENT_PROVIDER": "openai",
        "BUZZ_AGENT_MODEL": "oracle",
        "OPENAI_COMPAT_BASE_URL": "http://127.0.0.1:5555/v1",
        "OPENAI_COMPAT_API": "chat",
        "OPENAI_COMPAT_API_KEY": "oracle-12345678-solo-1",
        "EXTRA": "x",
    }


def test_an_agent_timeout_under_ten_seconds_still_starts_buzz_acp(tmp_path: Path) -> None:
    """buzz-acp refuses a turn cap under 10 s; a 3 s agent timeout (a short trial budget or a
    small --timeout-multiplier) must give it a cap it accepts, not an agent that exits at start."""
    roster = entry(tmp_path, include_platform_prompt=False, concurrency=1)
    endpoint = Endpoint.model_validate({"provider": "openai", "api_key_env": "MY_KEY"})
    short = replace(spec(tmp_path), agent_timeout_seconds=3.0)
    env = agent_environment(
        roster, endpoint_variables("m", endpoint, api_key="sk-1", oracle=None), short
    )
    assert env["BUZZ_ACP_MAX_TURN_DURATION"] == "10" and env["BUZZ_ACP_IDLE_TIMEOUT"] == "9"
    (tmp_path / "bin").mkdir()
    for program in ("buzz-agent", "buzz-dev-mcp"):
        (tmp_path / "bin" / program).write_text("#!/bin/sh\n")
        (tmp_path / "bin" / program).chmod(0o755)
    (tmp_path / "persona.md").write_text("persona\n")
    env["BUZZ_ACP_SYSTEM_PROMPT_FILE"] = str(tmp_path / "persona.md")
    config = load_acp_config(env)
    assert (config.max_turn_duration_s, config.idle_timeout_s) == (10, 9)
