"""The built-in oracle model (orchestrator.md §4.5, agent-harness.md §5).

Usage from the orchestrator:

    server = OracleServer(model_names=["oracle"])  # docker env: host=docker_listen_host(gw)
    await server.start(); url = server.base_url()           # or base_url("host.docker.internal")
    server.register(OracleTrial(trial_id=..., channel_id=..., requester_pubkey=...,
        requester_name=..., solve_path=..., state_dir=..., log_path=Path(...),
        agents={oracle_token(trial_id, agent_id): OracleAgent(agent_id=..., faults=plan)},
        done_probe=None,         # docker env: an async probe running `test -e`
        team=(OracleTeammate(agent_id=..., kind="orchestrator", pubkey=...), ...)))
    server.set_task_event(trial_id, task_event_id)          # step 11
    server.unregister(trial_id); await server.stop()

`fault_plan_from_env(endpoint.env)` validates the `ORACLE_*` keys (preflight) and raises
`OracleConfigError` whose str is `<key>: <reason>`.
"""

from orchestra.agents.oracle.faults import (
    FaultPlan,
    OracleConfigError,
    fault_plan_from_env,
)
from orchestra.agents.oracle.registry import (
    OracleAgent,
    OracleRegistrationError,
    OracleTeammate,
    OracleTrial,
    oracle_token,
)
from orchestra.agents.oracle.server import OracleServer, docker_listen_host

__all__ = [
    "FaultPlan",
    "OracleAgent",
    "OracleConfigError",
    "OracleRegistrationError",
    "OracleServer",
    "OracleTeammate",
    "OracleTrial",
    "docker_listen_host",
    "fault_plan_from_env",
    "oracle_token",
]
