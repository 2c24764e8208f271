"""The oracle model server (orchestrator.md §4.5): an OpenAI-compatible chat endpoint
that makes the real agent stack replay a task's `solution/solve.sh`."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

from orchestra.agents.oracle.context import ParsedContext, parse_context, turn_user_message
from orchestra.agents.oracle.decision import (
    Answer,
    ShellTool,
    Turn,
    completion_body,
    count_solve_calls,
    decide,
    fault_answer,
    final_answer,
    find_shell_tool,
    sse_body,
)
from orchestra.agents.oracle.http import HttpRequest, HttpResponse, HttpServer
from orchestra.agents.oracle.registry import (
    OracleAgent,
    OracleTrial,
    Registry,
    TrialState,
)

TASK_EVENT_WAIT_S = 15.0
HTTP_FAULTS: dict[str, tuple[int, dict[str, str], str, str]] = {
    "429": (429, {"retry-after": "1"}, "oracle: injected rate limit", "rate_limit_error"),
    "500": (500, {}, "oracle: injected server error", "server_error"),
}


def _json_response(
    status: int, payload: Any, headers: dict[str, str] | None = None
) -> HttpResponse:
    return HttpResponse(status, json.dumps(payload).encode(), headers or {})


def _error(status: int, message: str, kind: str) -> HttpResponse:
    return _json_response(status, {"error": {"message": message, "type": kind}})


def docker_listen_host(gateway: str | None) -> str:
    """Where to listen for the docker env: the bridge gateway address when it is an interface
    of this host (Linux engines), else 127.0.0.1 (Docker Desktop reaches the host's loopback).
    Never all interfaces."""
    if not gateway or gateway in ("0.0.0.0", "::"):
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET6 if ":" in gateway else socket.AF_INET) as probe:
            probe.bind((gateway, 0))
    except OSError:
        return "127.0.0.1"
    return gateway


class OracleServer:
    """One per orchestrator process; trials register and unregister while it runs."""

    def __init__(self, model_names: list[str], host: str = "127.0.0.1") -> None:
        self._model_names = list(model_names)
        self._host = host
        self._registry = Registry()
        self._http = HttpServer(self._handle)
        self._port: int | None = None
        self.unauthorized_requests = 0

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("oracle server is not running")
        return self._port

    def base_url(self, host: str | None = None) -> str:
        """`http://<host>:<port>/v1`; pass `host.docker.internal` for containers."""
        return f"http://{host or self._host}:{self.port}/v1"

    async def start(self) -> None:
        self._port = await self._http.start(self._host)

    async def stop(self) -> None:
        await self._http.stop()
        self._port = None

    def register(self, trial: OracleTrial) -> None:
        """Raises OracleRegistrationError when a token is held by another live trial."""
        self._registry.register(trial)

    def set_task_event(self, trial_id: str, event_id: str) -> None:
        self._registry.get_trial(trial_id).set_task_event(event_id)

    def unregister(self, trial_id: str) -> None:
        self._registry.unregister(trial_id)

    async def _handle(
        self, request: HttpRequest, disconnected: asyncio.Event
    ) -> HttpResponse | None:
        path = request.path.split("?", 1)[0].rstrip("/")
        route = (request.method, path)
        if route not in {("GET", "/v1/models"), ("POST", "/v1/chat/completions")}:
            return _error(404, f"no route for {request.method} {path}", "not_found")
        auth = request.headers.get("authorization", "")
        token = auth[len("Bearer ") :].strip() if auth.startswith("Bearer ") else ""
        found = self._registry.lookup(token)
        if found is None:
            self.unauthorized_requests += 1
            return _error(401, "oracle: unknown token", "authentication_error")
        if route[0] == "GET":
            data = [{"id": name, "object": "model"} for name in self._model_names]
            return _json_response(200, {"object": "list", "data": data})
        state, agent = found
        return await self._chat(state, agent, request, disconnected)

    async def _chat(
        self,
        state: TrialState,
        agent: OracleAgent,
        request: HttpRequest,
        disconnected: asyncio.Event,
    ) -> HttpResponse | None:
        started = time.monotonic()
        number = state.next_request_number(agent.agent_id)
        try:
            body = json.loads(request.body)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            return _error(400, "oracle: request body is not a JSON object", "invalid_request_error")
        stream = body.get("stream") is True
        messages = body.get("messages")
        shell = find_shell_tool(body.get("tools"))
        prompt = turn_user_message(messages)
        parsed = parse_context(prompt) if prompt is not None else ParsedContext()
        record: dict[str, Any] = {
            "t": None,
            "trial": state.trial.trial_id,
            "agent_id": agent.agent_id,
            "request_number": number,
            "stream": stream,
            "fault": None,
            "solve_calls_seen": count_solve_calls(messages),
            "parsed_context": parsed.model_dump(),
            "context_mismatch": None,
        }
        fault = agent.faults.fault_for(number)
        record["fault"] = fault
        if fault in HTTP_FAULTS:
            status, headers, message, kind = HTTP_FAULTS[fault]
            self._log(state, record, started, status, "fault", None)
            return _json_response(status, {"error": {"message": message, "type": kind}}, headers)
        if fault == "slow":
            if await self._sleep_unless_disconnected(agent.faults.slow_seconds, disconnected):
                self._log(state, record, started, 499, "fault", None, reason="client_disconnected")
                return None
        if fault in ("malformed", "unknown_tool", "truncated", "silent"):
            answer = fault_answer(fault, shell, agent.agent_id, number)
        else:
            answer = await self._decide(state, agent, number, shell, messages, parsed)
        record["context_mismatch"] = self._mismatch(state, parsed)
        payload = completion_body(
            answer,
            agent_id=agent.agent_id,
            number=number,
            created=state.registered_at,
            model=body.get("model"),
            request_bytes=len(request.body),
        )
        self._log(state, record, started, 200, answer.decision, answer)
        if stream:
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            return HttpResponse(
                200, sse_body(payload, include_usage), content_type="text/event-stream"
            )
        return _json_response(200, payload)

    async def _decide(
        self,
        state: TrialState,
        agent: OracleAgent,
        number: int,
        shell: ShellTool | None,
        messages: Any,
        parsed: ParsedContext,
    ) -> Answer:
        task_event_id = await state.wait_for_task_event(TASK_EVENT_WAIT_S)
        if task_event_id is None:
            return final_answer("no_task_event")
        if shell is None:
            return final_answer("no_shell_tool", "oracle: no shell tool offered")
        trial = state.trial
        turn = Turn(
            agent_id=agent.agent_id,
            request_number=number,
            channel_id=trial.channel_id,
            task_event_id=task_event_id,
            requester_pubkey=trial.requester_pubkey,
            requester_name=trial.requester_name,
            solve_path=trial.solve_path,
            solve_done=await state.solve_finished(),
            messages=messages,
            senders=parsed.senders,
        )
        return decide(shell, turn, trial.team)

    @staticmethod
    async def _sleep_unless_disconnected(seconds: float, disconnected: asyncio.Event) -> bool:
        """Sleep; True when the client hung up meanwhile."""
        try:
            async with asyncio.timeout(seconds):
                await disconnected.wait()
        except TimeoutError:
            return False
        return True

    @staticmethod
    def _mismatch(state: TrialState, parsed: ParsedContext) -> dict[str, Any] | None:
        trial = state.trial
        expected = {
            "channel_id": trial.channel_id,
            "reply_to": state.task_event_id,
            "requester_pubkey": trial.requester_pubkey,
            "requester_name": trial.requester_name,
        }
        actual = parsed.model_dump()
        differing = {
            key: {"registered": value, "parsed": actual[key]}
            for key, value in expected.items()
            if actual[key] is not None and value is not None and actual[key] != value
        }
        return differing or None

    @staticmethod
    def _log(
        state: TrialState,
        record: dict[str, Any],
        started: float,
        status: int,
        decision: str,
        answer: Answer | None,
        reason: str | None = None,
    ) -> None:
        record.update(
            t=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            status=status,
            decision=decision,
            reason=reason if answer is None else answer.reason,
            tool_name=answer.tool_name if answer else None,
            command=answer.command if answer else None,
            latency_ms=round((time.monotonic() - started) * 1000),
        )
        log_path = state.trial.log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
