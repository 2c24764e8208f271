"""The ACP surface of buzz-agent (agent-harness.md §2.2)."""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    StopReason,
)

from orchestra.agents.agent.config import AgentConfig
from orchestra.agents.agent.session import ClientChannel, Session, new_session_id
from orchestra.agents.agent.tools import McpServerSpec, ToolBox, ToolServerError
from orchestra.agents.agent.trajectory import TrajectoryRecorder
from orchestra.agents.agent.trimming import ContextMeter
from orchestra.agents.agent.turn import Turn, TurnResult
from orchestra.agents.llm.client import LLMClient
from orchestra.agents.llm.errors import LLMError
from orchestra.agents.llm.failures import FailureClass
from orchestra.agents.llm.types import Usage
from orchestra.startup import pause_collector, resume_collector

log = logging.getLogger("buzz_agent")

AGENT_NAME = "buzz-agent"
DEFAULT_HEARTBEAT_SECS = 30.0
AGENTS_MD_MAX_BYTES = 32 * 1024


def agent_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("buzz-orchestra")
    except PackageNotFoundError:
        return "0.0.0"


def prompt_failure(
    kind: str,
    detail: str,
    *,
    retryable: bool,
    status: int | None = None,
    failure_class: FailureClass | None = None,
) -> RequestError:
    """`data.class`: what the failure means (failures.py), for the orchestrator's scoring."""
    data: dict[str, Any] = {"kind": kind, "retryable": retryable, "detail": detail}
    if status is not None:
        data["status"] = status
    if failure_class is not None:
        data["class"] = failure_class.value
    return RequestError(-32603, detail, data)


def with_workspace_hints(base: str, cwd: str, hints: bool) -> str:
    """The session's system prompt plus, with hints on, the working directory and its
    AGENTS.md (agent-harness.md §2.3)."""
    if not hints:
        return base
    parts = [base.rstrip(), f"[Environment]\nWorking directory: {cwd}"]
    agents_md = Path(cwd) / "AGENTS.md"
    if agents_md.is_file():
        text = agents_md.read_bytes()[:AGENTS_MD_MAX_BYTES].decode("utf-8", errors="ignore")
        parts.append(f"[AGENTS.md]\n{text}")
    return "\n\n".join(parts)


def _preload_mcp_client() -> None:
    """Import the MCP client SDK (~0.6 s of CPU) before the first `session/new` needs it.

    buzz-acp sends `session/new` only after connecting to the relay (and, ahead of the turn,
    while a channel's batch window runs), so importing between `initialize` and then moves
    that cost off the turn's critical path. A daemon thread: the event loop stays responsive,
    and a `session/new` that comes first just waits on the import lock.
    """

    def run() -> None:
        pause_collector()  # as for the ACP SDK at start-up (orchestra/startup.py)
        try:
            importlib.import_module("mcp")
        except Exception:  # the session's own import reports it properly
            log.debug("preloading the mcp SDK failed", exc_info=True)
        finally:
            resume_collector()

    threading.Thread(target=run, name="preload-mcp", daemon=True).start()


def _heartbeat_secs(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return DEFAULT_HEARTBEAT_SECS


class BuzzAgent:
    def __init__(self, config: AgentConfig, llm: LLMClient, trajectory: TrajectoryRecorder) -> None:
        self._config = config
        self._llm = llm
        self._trajectory = trajectory
        self._conn: Any = None
        self._sessions: dict[str, Session] = {}
        self._preloading = False

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        if not self._preloading:
            self._preloading = True
            _preload_mcp_client()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=False,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=False
                ),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
            ),
            agent_info=Implementation(name=AGENT_NAME, version=agent_version()),
            field_meta={"buzz": {"systemPrompt": True, "heartbeat": True}},
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: Any = None,
        mcp_servers: list[Any] | None = None,
        **meta: Any,
    ) -> NewSessionResponse:
        specs = []
        for server in mcp_servers or []:
            if not isinstance(server, McpServerStdio):
                raise RequestError.invalid_params(
                    {
                        "detail": f"MCP server {getattr(server, 'name', '?')!r}: only stdio servers "
                        "are supported"
                    }
                )
            specs.append(
                McpServerSpec(
                    name=server.name,
                    command=server.command,
                    args=list(server.args),
                    env={v.name: v.value for v in server.env},
                )
            )
        base = meta.get("systemPrompt")
        base = base if isinstance(base, str) and base.strip() else self._config.system_prompt
        toolbox = ToolBox(
            cwd=cwd,
            init_timeout=self._config.mcp_init_timeout_secs,
            call_timeout=self._config.tool_timeout_secs,
            max_result_bytes=self._config.max_tool_result_text_bytes,
        )
        try:
            await toolbox.start(specs)
        except ToolServerError as exc:
            log.error("session not created: %s", exc)
            raise prompt_failure("mcp_error", str(exc), retryable=False) from None
        system = with_workspace_hints(base, cwd, hints=not self._config.no_hints)
        session = Session(
            id=new_session_id(),
            cwd=cwd,
            system=system,
            toolbox=toolbox,
            meter=ContextMeter.for_session(system, toolbox.specs),
            heartbeat_secs=_heartbeat_secs(meta.get("heartbeatSecs")),
        )
        self._sessions[session.id] = session
        self._trajectory.system(session.id, system, toolbox.specs)
        log.info("session created %s cwd=%s tools=%d", session.id, cwd, len(toolbox.specs))
        return NewSessionResponse(session_id=session.id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"detail": f"unknown session {session_id!r}"})
        if session.turn_task is not None:
            raise RequestError.invalid_request(
                {"detail": f"session {session_id} already has a prompt running"}
            )
        text = "\n\n".join(block.text for block in prompt if getattr(block, "type", "") == "text")
        client = ClientChannel(self._conn, session_id)
        turn = Turn(session, self._config, self._llm, client, self._trajectory)
        snapshot = len(session.history)
        session.turn_task = asyncio.create_task(turn.run(text))
        heartbeat = asyncio.create_task(client.heartbeats(session.heartbeat_secs))
        try:
            await asyncio.wait({session.turn_task})
        finally:
            heartbeat.cancel()
            task, session.turn_task = session.turn_task, None
            if not task.done():  # the prompt request itself was abandoned
                task.cancel()
        if task.cancelled():
            del session.history[session.round_start :]
            log.info("turn cancelled for session %s", session_id)
            return self._response("cancelled", turn.usage, session)
        error = task.exception()
        if error is not None:
            del session.history[snapshot:]  # the failed prompt leaves no trace
            raise self._failure(error)
        result: TurnResult = task.result()
        log.info("turn finished for session %s: %s", session_id, result.stop_reason)
        return self._response(result.stop_reason, result.usage, session, result.detail)

    def _failure(self, error: BaseException) -> RequestError:
        if isinstance(error, LLMError):
            log.error("prompt failed: %s: %s", error.describe(), error.detail)
            return prompt_failure(
                error.kind,
                f"LLM call failed: {error.describe()}: {error.detail}",
                retryable=error.retryable,
                status=error.status,
                failure_class=error.failure_class,
            )
        log.error("prompt failed with an internal error", exc_info=error)
        return prompt_failure("internal", f"internal error: {error!r}", retryable=False)

    @staticmethod
    def _response(
        stop_reason: StopReason, turn_usage: Usage, session: Session, detail: str | None = None
    ) -> PromptResponse:
        usage = {"turn": turn_usage.to_wire(), "session": session.usage.to_wire()}
        buzz: dict[str, Any] = {"usage": usage}
        if detail is not None:
            buzz["stopDetail"] = detail
        return PromptResponse(stop_reason=stop_reason, field_meta={"buzz": buzz})

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.turn_task is not None:
            log.info("cancel requested for session %s", session_id)
            session.turn_task.cancel()

    async def close(self) -> None:
        for session in self._sessions.values():
            if session.turn_task is not None:
                session.turn_task.cancel()
            await session.toolbox.close()
            log.info("session closed %s", session.id)
        await self._llm.aclose()
        self._trajectory.close()
