"""A scriptable fake of the paid model APIs for tests (OpenAI chat / Responses, Anthropic).

Runs a real HTTP server on 127.0.0.1 in a background thread, so it works from sync and async
tests and from any subprocess. Replies are consumed in order from one script queue (whatever
the route); when the script is empty a final "stop" answer in the route's shape is sent.

    with FakeLLM() as llm:
        llm.script(chat_tool_call("buzz_dev_mcp__shell", {"command": "echo hi"}),
                   chat_text("done"))
        env = llm.openai_env()          # BUZZ_AGENT_* / OPENAI_COMPAT_* for buzz-agent
        ...
        llm.requests[1].body["messages"][-1]   # the tool result sent back

`routes` answers fixed paths (GET or POST) outside the script and unrecorded, e.g. a served
context window: `llm.routes["/props"] = llama_cpp_props(4096)`. A POST to one of `SIDE_PATHS`
without a route is a 404, also outside the script (the endpoint check asks them of any server).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MODEL = "fake-model"
DEFAULT_KEY = "fake-provider-key-0123456789abcdef"
#: Ollama's model-information route, which the endpoint check asks of every server.
SIDE_PATHS = frozenset({"/api/show"})
#: The tool the endpoint check's capability probe makes the model call.
PROBE_TOOL = "ping"


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-serialisable, or a str sent verbatim
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the answer is written
    drop: bool = False  # close the connection without an answer


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any
    received_at: float


ReplySource = Reply | Callable[[RecordedRequest], Reply]


# ---- reply builders -----------------------------------------------------------------------


def chat_usage(
    prompt: int = 100, completion: int = 10, cached: int = 40, reasoning: int = 3
) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _chat(message: dict[str, Any], finish: str, usage: dict[str, Any] | None) -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": DEFAULT_MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage if usage is not None else chat_usage(),
        }
    )


def chat_text(
    text: str | None, finish: str = "stop", usage: dict[str, Any] | None = None, **extra: Any
) -> Reply:
    return _chat({"role": "assistant", "content": text, **extra}, finish, usage)


def chat_tool_calls(
    calls: list[tuple[str, str, Any]],
    finish: str = "tool_calls",
    usage: dict[str, Any] | None = None,
    text: str | None = None,
) -> Reply:
    """`calls` = (id, name, arguments); a non-str `arguments` is JSON-encoded."""
    tool_calls = [
        {
            "id": cid,
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for cid, name, args in calls
    ]
    return _chat({"role": "assistant", "content": text, "tool_calls": tool_calls}, finish, usage)


def chat_tool_call(name: str, arguments: Any, call_id: str = "call_1", **kwargs: Any) -> Reply:
    return chat_tool_calls([(call_id, name, arguments)], **kwargs)


def anthropic_usage(
    inp: int = 50, out: int = 10, cache_read: int = 30, cache_write: int = 20
) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


def anthropic_message(
    content: list[dict[str, Any]],
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
) -> Reply:
    return Reply(
        body={
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": DEFAULT_MODEL,
            "content": content,
            "stop_reason": stop_reason,
            "usage": usage if usage is not None else anthropic_usage(),
        }
    )


def anthropic_tool_use(
    name: str,
    tool_input: dict[str, Any],
    call_id: str = "toolu_01",
    thinking: str | None = None,
    **kwargs: Any,
) -> Reply:
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig-1"})
    content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
    return anthropic_message(content, stop_reason="tool_use", **kwargs)


def responses_message(
    output: list[dict[str, Any]], status: str = "completed", incomplete_reason: str | None = None
) -> Reply:
    body: dict[str, Any] = {
        "id": "resp_fake",
        "object": "response",
        "status": status,
        "output": output,
        "usage": {
            "input_tokens": 80,
            "output_tokens": 12,
            "input_tokens_details": {"cached_tokens": 16},
            "output_tokens_details": {"reasoning_tokens": 5},
        },
    }
    if incomplete_reason:
        body["incomplete_details"] = {"reason": incomplete_reason}
    return Reply(body=body)


def probe_tool_call() -> Reply:
    """The endpoint check's probe answered as a tool-calling server answers it."""
    return chat_tool_call(PROBE_TOOL, {"text": "pong"}, call_id="call_probe")


def llama_cpp_props(n_ctx: int) -> Reply:
    """llama.cpp's `GET /props`: `n_ctx` is one slot's window (`-c` over `--parallel`)."""
    return Reply(body={"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 4})


def is_probe(request: RecordedRequest) -> bool:
    """The endpoint check's probe (its only tool is `PROBE_TOOL`), on any route."""
    tools = request.body.get("tools") if isinstance(request.body, dict) else None
    names = [tool.get("function", tool).get("name") for tool in tools or []]
    return names == [PROBE_TOOL]


def error_reply(status: int, message: str = "fake error", retry_after: str | None = None) -> Reply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Reply(
        status=status, body={"error": {"message": message, "type": "fake_error"}}, headers=headers
    )


def _final_for(path: str) -> Reply:
    if path.endswith("/messages"):
        return anthropic_message([{"type": "text", "text": ""}])
    if path.endswith("/responses"):
        return responses_message([])
    return chat_text("")


NOT_FOUND = Reply(status=404, body={"error": {"message": "not found"}})


# ---- the server ---------------------------------------------------------------------------


class FakeLLM:
    """`port` 0 lets the system choose; a fixed one brings a server back where one went down."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[RecordedRequest] = []
        self.routes: dict[str, Reply] = {}
        self._script: list[ReplySource] = []
        self._lock = threading.Condition()
        self.closed = False
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening: later connections are refused. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self._thread.is_alive():  # shutdown() waits for a serve_forever() that runs
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def go_down(self) -> Reply:
        """A script entry: this request's connection is dropped and the server stops (a provider
        that dies mid-job)."""
        threading.Thread(target=self.close, daemon=True).start()
        return Reply(drop=True)

    def script(self, *replies: ReplySource) -> None:
        with self._lock:
            self._script.extend(replies)

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> list[RecordedRequest]:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.requests) >= count, timeout):
                raise TimeoutError(f"expected {count} requests, got {len(self.requests)}")
            return list(self.requests)

    def openai_env(self, model: str = DEFAULT_MODEL, key: str = DEFAULT_KEY) -> dict[str, str]:
        return {
            "BUZZ_AGENT_PROVIDER": "openai",
            "BUZZ_AGENT_MODEL": model,
            "OPENAI_COMPAT_BASE_URL": f"{self.base_url}/v1",
            "OPENAI_COMPAT_API": "chat",
            "OPENAI_COMPAT_API_KEY": key,
        }

    def anthropic_env(self, model: str = DEFAULT_MODEL, key: str = DEFAULT_KEY) -> dict[str, str]:
        return {
            "BUZZ_AGENT_PROVIDER": "anthropic",
            "BUZZ_AGENT_MODEL": model,
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": key,
        }

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()
            source = self._script.pop(0) if self._script else None
        if source is None:
            return _final_for(request.path)
        return source(request) if callable(source) else source

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                self._send(fake.routes.get(self.path, NOT_FOUND))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path in fake.routes or self.path in SIDE_PATHS:
                    self._send(fake.routes.get(self.path, NOT_FOUND))
                    return
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", errors="replace")
                request = RecordedRequest(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    received_at=time.monotonic(),
                )
                reply = fake._next_reply(request)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (OSError, ValueError):
                    pass  # the client gave up (e.g. its read timeout fired)

        return Handler
