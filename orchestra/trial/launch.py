"""What an agent launch needs: its oracle registration and process environment (§4.5, §7.9)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestra.agents.oracle.faults import fault_plan_from_env
from orchestra.agents.oracle.registry import DoneProbe, OracleAgent, OracleTrial, oracle_token
from orchestra.config.condition import Condition
from orchestra.config.manifest import AgentSlot
from orchestra.nostr.keys import Keys
from orchestra.paths import EnvPaths
from orchestra.trial.agent_env import (
    AgentLaunchSpec,
    OracleAccess,
    agent_environment,
    endpoint_variables,
)
from orchestra.trial.context import JobContext
from orchestra.trial.environment import TrialEnvironment
from orchestra.trial.identities import Identity


def oracle_registration(
    condition: Condition,
    slots: Sequence[AgentSlot],
    *,
    trial_id: str,
    channel_id: str,
    user: Identity,
    env: EnvPaths,
    log_path: Path,
    done_probe: DoneProbe | None = None,
) -> OracleTrial:
    """One token per oracle-served agent, each with its endpoint's fault plan."""
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
        solve_path=str(env.solve_sh),
        state_dir=str(env.solve_state_dir(channel_id)),
        agents=agents,
        log_path=log_path,
        done_probe=done_probe,
    )


def agent_process_environment(
    ctx: JobContext,
    slot: AgentSlot,
    environment: TrialEnvironment,
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
            f"http://{environment.oracle_host}:{oracle_port}/v1",
            oracle_token(trial_id, slot.agent_id),
        )
    endpoint_env = endpoint_variables(
        slot.entry.endpoint,
        endpoint,
        api_key=ctx.api_keys.get(endpoint.api_key_env or ""),
        oracle=access,
        docker_env=environment.kind == "docker",
    )
    paths = environment.paths
    spec = AgentLaunchSpec(
        relay_url=ctx.stack.agent_relay_url,
        secret_hex=keys.secret_hex,
        channel_id=channel_id,
        programs_dir=environment.programs_dir,
        system_prompt_file=str(paths.system_prompt(slot.agent_id)),
        event_log_file=str(paths.events_log(slot.agent_id)),
        home=str(paths.home),
        tmpdir=None if paths.tmpdir is None else str(paths.tmpdir),
        path=environment.agent_path,
        agent_timeout_seconds=agent_seconds,
    )
    env = agent_environment(slot.entry, endpoint_env, spec)
    env.update(environment.inherited)
    return env
