"""`buzz-acp` entry point (agent-harness.md §1.1, §1.2, §1.10)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sys
import traceback

from orchestra.agents.acp.config import AcpConfig, load_config
from orchestra.agents.acp.eventlog import EventLog, PromptLog, open_log
from orchestra.agents.acp.options import help_text, parse_flags
from orchestra.agents.acp.proctree import AgentProcess, start_agent_process
from orchestra.agents.acp.prompt import compose_system_prompt
from orchestra.agents.acp.records import AgentSpawned, Shutdown, Startup
from orchestra.agents.logs import LOG_LEVELS, setup_logging
from orchestra.agents.sdk_imports import field_docstrings_skipped
from orchestra.processes import become_subreaper
from orchestra.settings import SettingError
from orchestra.startup import exit_now, pause_collector, resume_collector

VERSION = "0.1.0"
#: §1.10: a configuration error (a setting, or a log file that cannot be opened) exits 1.
EXIT_CONFIGURATION = SettingError.exit_code
log = logging.getLogger("buzz_acp")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def startup_record(events: EventLog, config: AcpConfig, system_prompt: str) -> None:
    events.emit(
        Startup(
            version=VERSION,
            pid=os.getpid(),
            relay_url=config.relay_url,
            channels=list(config.channels) or None,
            subscribe=config.subscribe,
            respond_to=config.respond_to,
            pool_size=config.pool_size,
            agent_command=config.agent_command,
            mcp_command=config.mcp_command or "none",
            base_prompt=config.base_prompt_source,
            base_prompt_sha256=sha256(config.base_prompt) if config.base_prompt else None,
            system_prompt_sha256=sha256(system_prompt),
            memory=config.memory,
        )
    )


async def start_agents(config: AcpConfig, events: EventLog) -> list[AgentProcess]:
    """Spawn the pool's agents (§1.2 step 3) before the bridge is imported: the ACP SDK and
    relay client cost buzz-acp ~0.5 s of imports, which then overlap the agents' own start-up
    instead of preceding it. The pool initializes them; a spawn error is left to the pool,
    which reports it as at any spawn (exit 1)."""
    started: list[AgentProcess] = []
    for index in range(config.pool_size):
        try:
            process = await start_agent_process(config.agent_command, config.agent_args, config.cwd)
        except OSError:
            break
        events.emit(AgentSpawned(slot=index, pid=process.pid))
        started.append(process)
    return started


async def serve(config: AcpConfig, events: EventLog, prompts: PromptLog) -> int:
    started = await start_agents(config, events)
    # Imported here so that `--help` and configuration errors do not pay for the ACP SDK.
    with field_docstrings_skipped():
        from orchestra.agents.acp.bridge import Bridge

    resume_collector()
    return await Bridge(config, events, prompts).run(started)


def main() -> None:
    pause_collector()  # until the ACP SDK is imported (orchestra/startup.py)
    argv = sys.argv[1:]
    if "--help" in argv or "-h" in argv:
        try:
            print(help_text(), flush=True)
        except BrokenPipeError:  # `buzz-acp --help | head`: the reader has all it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    try:
        flags = parse_flags(argv)
    except SettingError:
        flags = {}
    settings = {**os.environ, **flags}
    setup_logging(LOG_LEVELS.get(settings.get("BUZZ_ACP_LOG_LEVEL", "info").lower(), logging.INFO))
    try:
        stream = open_log(settings.get("BUZZ_ACP_EVENT_LOG") or None)
    except OSError as error:
        log.error("configuration error: BUZZ_ACP_EVENT_LOG: cannot open: %s", error.strerror)
        sys.exit(EXIT_CONFIGURATION)
    try:
        config = load_config(os.environ, argv)
        prompt_stream = open_log(config.prompt_log) if config.prompt_log else None
    except (SettingError, OSError) as error:
        message = str(error) if isinstance(error, SettingError) else f"BUZZ_ACP_PROMPT_LOG: {error}"
        log.error("configuration error: %s", message)
        EventLog(stream, None).emit(
            Shutdown(reason="configuration_error", exit_code=EXIT_CONFIGURATION)
        )
        sys.exit(EXIT_CONFIGURATION)
    events = EventLog(stream, config.keys.pubkey)
    if config.ignored_set:
        log.info("ignored (accepted for compatibility): %s", ", ".join(config.ignored_set))
    # The startup hash covers base + persona; the `core` memory is added per session.
    static_prompt = compose_system_prompt(config.base_prompt, config.persona, None)
    startup_record(events, config, static_prompt)
    log.info("system prompt sha256 %s", sha256(static_prompt))
    # Orphans of the agent tree re-parent to this process, so shutdown can still end them.
    become_subreaper()
    try:
        code = asyncio.run(serve(config, events, PromptLog(prompt_stream)))
    except Exception:
        traceback.print_exc(file=sys.stderr)
        events.emit(Shutdown(reason="internal_error", exit_code=4))
        code = 4
    exit_now(code)
