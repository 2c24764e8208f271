"""`buzz-agent` entry point: an ACP agent on stdin/stdout; logs on stderr."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestra.agents.agent.config import AgentConfig
    from orchestra.agents.agent.trajectory import TrajectoryRecorder

log = logging.getLogger("buzz_agent")


async def _serve(config: AgentConfig, trajectory: TrajectoryRecorder) -> None:
    import acp

    from orchestra.agents.agent.acp_agent import BuzzAgent
    from orchestra.agents.llm.budget import RetryBudget
    from orchestra.agents.llm.client import LLMClient
    from orchestra.startup import resume_collector

    resume_collector()

    llm = LLMClient(
        config.provider_settings(),
        effort=config.effort,
        timeout_secs=config.llm_timeout_secs,
        max_retries=config.llm_max_retries,
        budget=RetryBudget(config.retry_budget, config.retry_budget_secs),
    )
    agent = BuzzAgent(config, llm, trajectory)
    main_task = asyncio.current_task()
    assert main_task is not None
    closing = False

    def on_signal() -> None:
        # Once close() runs, a signal (buzz-acp TERMs the whole tree when the agent has not
        # exited 2 s after its stdin closed) must not cancel it: that would only cut the MCP
        # servers' shutdown short and end in a CancelledError traceback.
        if not closing:
            main_task.cancel()

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal)
    try:
        # acp's `Agent` Protocol lists every optional method (session loading, modes,
        # extensions …) as required; its router answers a missing one with method-not-found.
        await acp.run_agent(agent)  # type: ignore[arg-type]
    except asyncio.CancelledError:
        log.info("buzz-agent stopping on signal")
    finally:
        closing = True
        await agent.close()


def main() -> None:
    from orchestra.startup import pause_collector

    pause_collector()  # until the ACP SDK is imported (orchestra/startup.py)
    from orchestra.agents.logs import setup_logging

    setup_logging(logging.INFO)
    from orchestra.agents.agent.config import IGNORED_VARIABLES, load_config
    from orchestra.agents.llm.effort import warn_if_budget_disabled
    from orchestra.settings import SettingError, present

    try:
        config = load_config(os.environ)
    except SettingError as exc:
        log.error("configuration error: %s", exc)
        sys.exit(exc.exit_code)
    setup_logging(logging.getLevelName(config.log_level.upper()))
    for name in present(os.environ, IGNORED_VARIABLES):
        log.info("%s is accepted for compatibility and ignored", name)
    warn_if_budget_disabled(
        config.effort, config.anthropic_thinking, config.max_output_tokens, config.provider
    )
    from orchestra.agents.sdk_imports import field_docstrings_skipped

    with field_docstrings_skipped():  # the first import of the ACP SDK (agents/sdk_imports.py)
        from orchestra.agents.agent.acp_agent import AGENT_NAME, agent_version
    from orchestra.agents.agent.trajectory import TrajectoryRecorder

    try:
        trajectory = TrajectoryRecorder.open(
            config.trajectory_log, name=AGENT_NAME, version=agent_version(), model=config.model
        )
    except OSError as exc:
        log.error(
            "configuration error: BUZZ_AGENT_TRAJECTORY_LOG: cannot open %s: %s",
            config.trajectory_log,
            exc.strerror or exc,
        )
        sys.exit(1)
    log.info(
        "buzz-agent starting: provider=%s model=%s route=%s",
        config.provider,
        config.model,
        config.route,
    )
    asyncio.run(_serve(config, trajectory))
    from orchestra.startup import exit_now

    exit_now(0)
