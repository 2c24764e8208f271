"""What one agent launch needs: its oracle registration and its process environment
(orchestrator.md §4.2, §4.5, §7.9)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from orchestra.agents.acp.options import MIN_TURN_DURATION_SECONDS
from orchestra.agents.agent.config import load_config
from orchestra.agents.llm.client import ProviderSettings
from orchestra.agents.oracle.faults import fault_plan_from_env
from orchestra.agents.oracle.registry import (
    DoneProbe,
    OracleAgent,
    OracleTeammate,
    OracleTrial,
    oracle_token,
)
from orchestra.config.condition import Condition
from orchestra.config.endpoints import Endpoint
from orchestra.config.manifest import AgentSlot, RosterEntry
from orchestra.nostr.keys import Keys
from orchestra.paths import EnvPaths
from orchestra.trial.context import JobContext
from orchestra.trial.env.protocol import EnvFacts
from orchestra.trial.identities import Identity


@dataclass(frozen=True)
class OracleAccess:
    base_url: str  # e.g. http://127.0.0.1:<port>/v1
    token: str


def endpoint_variables(
    endpoint_name: str,
    endpoint: Endpoint,
    *,
    api_key: str | None,
    oracle: OracleAccess | None,
    host_alias: str | None = None,
) -> dict[str, str]:
    """§4.2: what an endpoint contributes, including the API key value. `host_alias`: the
    name agents use for the host (`EnvFacts.host_alias`), for loopback base URLs."""
    if endpoint.is_oracle:
        if oracle is None:
            raise ValueError(f"endpoint {endpoint_name} needs the oracle server")
        env = {
            "BUZZ_AGENT_PROVIDER": "openai",
            "BUZZ_AGENT_MODEL": endpoint_name,
            "OPENAI_COMPAT_BASE_URL": oracle.base_url,
            "OPENAI_COMPAT_API": "chat",
            "OPENAI_COMPAT_API_KEY": oracle.token,
        }
        env.update(endpoint.agent_env_items())
        return env
    env = {
        "BUZZ_AGENT_PROVIDER": endpoint.provider,
        "BUZZ_AGENT_MODEL": endpoint.model_id(endpoint_name),
    }
    if endpoint.api_key_env and api_key:
        env[endpoint.api_key_env] = api_key
        if endpoint.provider_key_variable:
            env[endpoint.provider_key_variable] = api_key
    base_url = endpoint.base_url_seen_from(host_alias)
    if base_url:
        env["OPENAI_COMPAT_BASE_URL"] = base_url
    env.update(endpoint.agent_env_items())
    return env


def provider_settings(
    endpoint_name: str, endpoint: Endpoint, api_key: str | None
) -> ProviderSettings:
    """What `buzz-agent` makes of a (non-oracle) endpoint's variables on the host: route, base
    URL, model and key, read by its own configuration code. Raises `SettingError`."""
    env = endpoint_variables(endpoint_name, endpoint, api_key=api_key, oracle=None)
    return load_config(env).provider_settings()


def _extra_value(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class AgentLaunchSpec:
    """Everything trial-specific about one agent's environment."""

    relay_url: str
    secret_hex: str
    channel_id: str
    programs_dir: PurePath
    system_prompt_file: str
    event_log_file: str
    trajectory_log_file: str
    home: str
    tmpdir: str | None  # None: unset (docker env, the container's /tmp)
    path: str | None  # None: the environment's own PATH
    agent_timeout_seconds: float
    max_repeated_calls: int = 0  # `--max-repeated-calls` (0: no limit)


def agent_environment(
    entry: RosterEntry, endpoint_env: Mapping[str, str], spec: AgentLaunchSpec
) -> dict[str, str]:
    """Later rows override earlier ones; configs cannot set the trial-identity variables."""
    env = dict(endpoint_env)
    env.update({key: _extra_value(value) for key, value in entry.generation.extra.items()})
    # buzz-acp refuses a turn cap under 10 s; a shorter agent timeout is the orchestrator's
    # own to enforce (it stops the trial), so the cap is only ever the backstop
    timeout = max(MIN_TURN_DURATION_SECONDS, math.ceil(spec.agent_timeout_seconds))
    generation = entry.generation
    env.update(
        {
            "BUZZ_RELAY_URL": spec.relay_url,
            "BUZZ_PRIVATE_KEY": spec.secret_hex,
            "BUZZ_ACP_AGENT_COMMAND": str(spec.programs_dir / "buzz-agent"),
            "BUZZ_ACP_AGENT_ARGS": "",
            "BUZZ_ACP_MCP_COMMAND": str(spec.programs_dir / "buzz-dev-mcp"),
            "BUZZ_ACP_CHANNELS": spec.channel_id,
            "BUZZ_ACP_SUBSCRIBE": "mentions",
            "BUZZ_ACP_RESPOND_TO": "anyone",
            "BUZZ_ACP_NO_MEMORY": "true",
            "BUZZ_ACP_SYSTEM_PROMPT_FILE": spec.system_prompt_file,
            "BUZZ_ACP_AGENTS": str(entry.concurrency),
            "BUZZ_ACP_MAX_TURN_DURATION": str(timeout),
            "BUZZ_ACP_IDLE_TIMEOUT": str(timeout - 1),
            "BUZZ_ACP_EVENT_LOG": spec.event_log_file,
            "BUZZ_AGENT_TRAJECTORY_LOG": spec.trajectory_log_file,
            "BUZZ_AGENT_THINKING_EFFORT": generation.thinking_effort or "medium",
            "BUZZ_AGENT_MAX_ROUNDS": str(entry.budget.max_calls or 0),
            "BUZZ_AGENT_MAX_REPEATED_CALLS": str(spec.max_repeated_calls),
            "BUZZ_AGENT_NO_HINTS": "1",
            "HOME": spec.home,
        }
    )
    if spec.path is not None:
        env["PATH"] = spec.path
    if not entry.include_platform_prompt:
        env["BUZZ_ACP_NO_BASE_PROMPT"] = "true"
    optional = {
        "BUZZ_AGENT_MAX_OUTPUT_TOKENS": generation.max_output_tokens,
        "BUZZ_AGENT_MAX_CONTEXT_TOKENS": generation.context_window_tokens,
        "BUZZ_AGENT_HANDOFF_PERCENT": generation.compact_at_percent,
        "BUZZ_AGENT_HANDOFF_AT_TOKENS": generation.compact_at_tokens,
    }
    env.update({key: str(value) for key, value in optional.items() if value is not None})
    if spec.tmpdir is not None:
        env["TMPDIR"] = spec.tmpdir
    return env


def oracle_registration(
    condition: Condition,
    slots: Sequence[AgentSlot],
    *,
    pubkeys: Mapping[str, str],
    trial_id: str,
    channel_id: str,
    user: Identity,
    env: EnvPaths,
    log_path: Path,
    done_probe: DoneProbe | None = None,
    solve_path: PurePath | None = None,
) -> OracleTrial:
    """One token per oracle-served agent, each with its endpoint's fault plan; the roster as
    the team (`pubkeys`: agent id -> hex pubkey); the oracle runs `solve_path` (default: the
    task's `solve.sh` where the environment has it)."""
    agents = {
        oracle_token(trial_id, slot.agent_id): OracleAgent(
            agent_id=slot.agent_id,
            faults=fault_plan_from_env(condition.endpoint(slot.entry).oracle_settings()),
        )
        for slot in slots
        if condition.endpoint(slot.entry).is_oracle
    }
    return OracleTrial(
        trial_id=trial_id,
        channel_id=channel_id,
        requester_pubkey=user.pubkey,
        requester_name=user.name,
        solve_path=str(solve_path or env.solve_sh),
        state_dir=str(env.solve_state_dir(channel_id)),
        agents=agents,
        log_path=log_path,
        done_probe=done_probe,
        team=tuple(
            OracleTeammate(agent_id=slot.agent_id, kind=slot.kind, pubkey=pubkeys[slot.agent_id])
            for slot in slots
        ),
    )


def agent_process_environment(
    ctx: JobContext,
    slot: AgentSlot,
    facts: EnvFacts,
    *,
    trial_id: str,
    keys: Keys,
    channel_id: str,
    oracle_port: int | None,
    agent_seconds: float,
) -> dict[str, str]:
    """The complete environment of one `buzz-acp` (replaced, not merged, in the local env)."""
    endpoint = ctx.condition.endpoint(slot.entry)
    access = None
    if endpoint.is_oracle and oracle_port is not None:
        access = OracleAccess(
            f"http://{facts.host_address}:{oracle_port}/v1", oracle_token(trial_id, slot.agent_id)
        )
    endpoint_env = endpoint_variables(
        slot.entry.endpoint,
        endpoint,
        api_key=ctx.api_keys.get(endpoint.api_key_env or ""),
        oracle=access,
        host_alias=facts.host_alias,
    )
    paths = facts.paths
    spec = AgentLaunchSpec(
        relay_url=ctx.stack.agent_relay_url,
        secret_hex=keys.secret_hex,
        channel_id=channel_id,
        programs_dir=facts.programs_dir,
        system_prompt_file=str(paths.system_prompt(slot.agent_id)),
        event_log_file=str(paths.events_log(slot.agent_id)),
        trajectory_log_file=str(paths.trajectory_log(slot.agent_id)),
        home=str(paths.home),
        tmpdir=None if paths.tmpdir is None else str(paths.tmpdir),
        path=facts.agent_path,
        agent_timeout_seconds=agent_seconds,
        max_repeated_calls=ctx.options.max_repeated_calls,
    )
    env = agent_environment(slot.entry, endpoint_env, spec)
    env.update(facts.inherited)
    return env
