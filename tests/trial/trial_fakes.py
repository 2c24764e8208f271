"""A fake environment kind for running real trials (`run_trial`) against the real relay.

The environment keeps its logical paths on the host (the local layout) and starts no process:
each "agent" is a scripted coroutine that writes ACP event-log records and may act on the
relay with the key the trial gave it. Every primitive call is recorded, so a test can assert
that stop, log collection and finalize ran. Faults are injected by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from orchestra.agents.agent.trajectory import TrajectoryRecorder
from orchestra.agents.llm.types import AssistantMessage, LLMResponse, ToolCall, Usage
from orchestra.buzz import BuzzClient, BuzzError
from orchestra.config.condition import load_condition
from orchestra.config.task import Task, load_task
from orchestra.documents.enums import SandboxKind
from orchestra.documents.run_config import TrialSettings
from orchestra.nostr.keys import Keys
from orchestra.nostr.kinds import Kind
from orchestra.paths import (
    DEFAULT_ENDPOINT_CONFIG,
    DEFAULT_MANIFEST,
    PROJECT_ROOT,
    JobPaths,
    StatePaths,
    TrialPaths,
)
from orchestra.processes import first_of
from orchestra.stack.info import StackInfo
from orchestra.stack.registry import Registry
from orchestra.stack.state import BenchmarkState
from orchestra.trial.context import JobContext, OracleHost
from orchestra.trial.env.protocol import LOOPBACK, EnvFacts, ExecResult
from orchestra.trial.relay_ops import ClientPool
from orchestra.verify.inputs import VerifierInputs
from orchestra.verify.outcome import NETWORK_NOT_ISOLATED, VerifierRun

TASK = PROJECT_ROOT / "tasks" / "buzz-native" / "reply-to-thread"  # solo, no scripted messages


class FakeAgent:
    """An `AgentProcess` whose life is a scripted coroutine."""

    def __init__(self, agent_id: str, env: Mapping[str, str], on_exit: Callable[[], None]):
        self.agent_id = agent_id
        self.env = dict(env)
        self.exit_code: int | None = None
        self.stopping = False
        self._on_exit = on_exit
        self._client: Any = None
        self.task: asyncio.Task[None] | None = None

    def record(self, event: str, **fields: Any) -> None:
        """Append one ACP event-log record, as buzz-acp would."""
        with open(self.env["BUZZ_ACP_EVENT_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps({"event": event, **fields}) + "\n")

    def subscribe(self) -> None:
        self.record("subscribed", channel_id=self.env["BUZZ_ACP_CHANNELS"])

    def client(self) -> Any:
        """This agent's relay client (its real key from the environment it was given)."""
        if self._client is None:
            keys = Keys.from_secret(bytes.fromhex(self.env["BUZZ_PRIVATE_KEY"]))
            self._client = BuzzClient.from_keys(self.env["BUZZ_RELAY_URL"], keys, timeout=30)
        return self._client

    async def post(self, content: str) -> None:
        """A message in the trial channel as this agent."""
        await self.client().messages_send(channel=self.env["BUZZ_ACP_CHANNELS"], content=content)

    async def wait_for_the_task(self) -> None:
        """Until the channel's first message (the task) reaches this agent."""
        channel = {"kinds": [Kind.MESSAGE], "#h": [self.env["BUZZ_ACP_CHANNELS"]]}
        async with self.client().subscribe([channel]) as subscription:
            async for item in subscription:
                if isinstance(item, dict):
                    return

    async def mentions(self) -> AsyncIterator[dict[str, Any]]:
        """The channel's kind-9 events that p-tag this agent, as the relay delivers them
        (stored ones first): what buzz-acp's `acp-ch-*` subscription receives."""
        channel = {
            "kinds": [Kind.MESSAGE],
            "#h": [self.env["BUZZ_ACP_CHANNELS"]],
            "#p": [self.pubkey],
        }
        async with self.client().subscribe([channel]) as subscription:
            async for item in subscription:
                if isinstance(item, dict):
                    yield item

    @property
    def pubkey(self) -> str:
        return Keys.from_secret(bytes.fromhex(self.env["BUZZ_PRIVATE_KEY"])).pubkey

    def turn(self, turn_id: str, event_ids: list[str]) -> None:
        """A whole turn that delivers `event_ids`, as buzz-acp logs it."""
        self.record("turn_started", turn_id=turn_id, session_id="s1", event_ids=event_ids)
        self.record("turn_delivered", turn_id=turn_id, event_ids=event_ids)
        self.record("turn_completed", turn_id=turn_id, stop_reason="end_turn", usage={})

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    def exit(self, code: int) -> None:
        if self.exit_code is None:
            self.exit_code = code
            self._on_exit()


Behaviour = Callable[[FakeAgent], Awaitable[None]]
#: the `trial` fixture (conftest): `await trial(behaviour, ...) -> (result, environment)`
Trial = Callable[..., Awaitable[tuple[dict[str, Any], "FakeEnvironment"]]]


async def subscribes(agent: FakeAgent) -> None:
    """Ready, then silent until stopped (the agent timeout ends the trial)."""
    agent.subscribe()


async def finishes(agent: FakeAgent) -> None:
    """Ready, then one turn on the task that ends the trial with a `DONE:` message."""
    agent.subscribe()
    await agent.wait_for_the_task()
    agent.record("turn_started", turn_id="t1", session_id="s1", event_ids=[])
    await agent.post("DONE: replied")
    agent.record("turn_completed", turn_id="t1", stop_reason="end_turn", usage={})


#: An API key with characters JSON escapes, so a JSON file holds it in another form.
PLANTED_API_KEY = 'sk-planted-"quoted"-\\key'


async def finishes_with_a_trajectory(agent: FakeAgent) -> None:
    """As `finishes`, recording its steps as buzz-agent does; a tool prints the agent's private
    key and the model repeats it with an API key (the secret scan takes both out)."""
    agent.subscribe()
    recorder = TrajectoryRecorder.open(
        agent.env["BUZZ_AGENT_TRAJECTORY_LOG"], name="buzz-agent", version="test", model="oracle"
    )
    recorder.system("ses_1", "[Base]\nbase prompt", [])
    await agent.wait_for_the_task()
    agent.record("turn_started", turn_id="t1", session_id="ses_1", event_ids=[])
    recorder.user("ses_1", "[Context]\nthe task")
    call = ToolCall("call_1", "buzz_dev_mcp__shell", '{"command": "printenv BUZZ_PRIVATE_KEY"}')
    recorder.response(
        "ses_1",
        LLMResponse(AssistantMessage("", [call]), "tool_calls", "tool_calls", Usage(10, 2)),
        [call],
    )
    key = agent.env["BUZZ_PRIVATE_KEY"]
    recorder.tool_result("ses_1", call.id, f"{key}\n[exit code: 0]", is_error=False)
    recorder.response(
        "ses_1",
        LLMResponse(
            AssistantMessage(f"The key is {key}; the API key is {PLANTED_API_KEY}."),
            "end_turn",
            "stop",
            Usage(20, 4),
        ),
        [],
    )
    recorder.close()
    await agent.post("DONE: replied")
    agent.record("turn_completed", turn_id="t1", stop_reason="end_turn", usage={})


async def finishes_after_acting_elsewhere(agent: FakeAgent) -> None:
    """As `finishes`, having first created a private channel and posted there, set a profile,
    published an ephemeral event, and written a file in its home that quotes its private key."""
    agent.subscribe()
    await agent.wait_for_the_task()
    agent.record("turn_started", turn_id="t1", session_id="s1", event_ids=[])
    client = agent.client()
    side = (await client.channels_create(name="side-room", visibility="private"))["channel_id"]
    await client.messages_send(channel=side, content="canary-elsewhere")
    await client.users_set_profile(name="renamed")
    await client.publish(kind=20001, content="typing", tags=[["h", side]])
    await client.publish(kind=20001, content=f"key {agent.env['BUZZ_PRIVATE_KEY']}", tags=[])
    notes = Path(agent.env["HOME"]) / "notes.txt"
    notes.write_text(f"key={agent.env['BUZZ_PRIVATE_KEY']}\nACME_API_TOKEN line\n")
    await agent.post("DONE: replied")
    agent.record("turn_completed", turn_id="t1", stop_reason="end_turn", usage={})


def fresh_key_canary(agent_pubkey: str) -> str:
    """The canary `leaks_under_a_fresh_key` posts: unique to the agent, so to its trial."""
    return f"canary-{agent_pubkey[:16]}"


async def leaks_under_a_fresh_key(agent: FakeAgent) -> None:
    """As `finishes`, having first posted its canary and its own private key under a key it
    made up, in a private channel with only that key: no identity of the trial may read it
    (§8.9)."""
    agent.subscribe()
    await agent.wait_for_the_task()
    own = Keys.from_secret(bytes.fromhex(agent.env["BUZZ_PRIVATE_KEY"]))
    fresh = BuzzClient.from_keys(agent.env["BUZZ_RELAY_URL"], Keys.generate(), timeout=30)
    try:
        hidden = (await fresh.channels_create(name="stash", visibility="private"))["channel_id"]
        await fresh.messages_send(channel=hidden, content=fresh_key_canary(own.pubkey))
        await fresh.messages_send(channel=hidden, content=f"key {own.secret_hex}")
    finally:
        await fresh.close()
    await agent.post("DONE: replied")


async def never_subscribes(agent: FakeAgent) -> None:
    pass


async def exits_at_once(agent: FakeAgent) -> None:
    agent.exit(3)


async def exits_after_subscribing(agent: FakeAgent) -> None:
    """Ready, then crashes once the task has been posted."""
    agent.subscribe()
    await agent.wait_for_the_task()
    agent.exit(7)


async def finishes_with_a_turn_in_flight(agent: FakeAgent) -> None:
    """`DONE:` from inside a turn that has not ended: the usage settle waits for it (§7.2
    step 15)."""
    agent.subscribe()
    await agent.wait_for_the_task()
    agent.record("turn_started", turn_id="t1", session_id="s1", event_ids=[])
    await agent.post("DONE: still busy")


@dataclass
class Faults:
    """Which primitive raises (or blocks until released), by name."""

    raises: dict[str, BaseException] = field(default_factory=dict)
    blocks: dict[str, asyncio.Event] = field(default_factory=dict)
    reached: dict[str, asyncio.Event] = field(default_factory=dict)

    def block(self, name: str) -> asyncio.Event:
        """`name` blocks until the returned event is set; `reached(name)` says it got there."""
        self.blocks[name] = release = asyncio.Event()
        return release

    def reached_event(self, name: str) -> asyncio.Event:
        return self.reached.setdefault(name, asyncio.Event())

    async def at(self, name: str) -> None:
        self.reached_event(name).set()
        if name in self.raises:
            raise self.raises[name]
        if name in self.blocks:
            await self.blocks[name].wait()


class FakeEnvironment:
    """`TrialEnvironment` without processes; logical paths are the local env's host paths."""

    def __init__(self, trial: TrialPaths, task: Task, kind: FakeKind) -> None:
        self.trial = trial
        self.kind = kind
        self.calls: list[str] = []
        self.agents: list[FakeAgent] = []
        self.hurried = False
        self.facts = EnvFacts(
            paths=trial.local_env(task.fixture.home),
            programs_dir=Path("/fake/bin"),
            host_alias=None,
            agent_path=None,
            inherited={},
            sandbox=SandboxKind.NONE,
        )

    async def _call(self, name: str) -> None:
        self.calls.append(name)
        await self.kind.faults.at(name)

    async def prepare(self) -> None:
        await self._call("prepare")
        paths = self.facts.paths
        _make_directories(paths.workspace, paths.tmpdir, paths.home, paths.logs_artifacts)

    async def close(self) -> None:
        await self._call("close")

    async def start_agent(
        self,
        agent_id: str,
        env: Mapping[str, str],
        *,
        stdout: Path,
        stderr: Path,
        on_exit: Callable[[], None],
    ) -> FakeAgent:
        await self._call("start_agent")
        agent = FakeAgent(agent_id, env, on_exit)
        self.agents.append(agent)
        agent.task = asyncio.create_task(self.kind.behaviour(agent))
        return agent

    async def stop_agents(self, hurry: asyncio.Event) -> list[str]:
        self.calls.append("stop_agents")
        for agent in self.agents:
            agent.stopping = True
        if "stop_agents" in self.kind.faults.blocks:
            # a stop that would take its whole grace period; only the second signal ends it
            self.kind.faults.reached_event("stop_agents").set()
            release = self.kind.faults.blocks["stop_agents"]
            self.hurried = not await first_of(release.wait(), hurry, None)
        for agent in self.agents:
            if agent.task is not None:
                agent.task.cancel()
                await asyncio.gather(agent.task, return_exceptions=True)
            await agent.close()
            agent.exit(-15)
        return ["fake agents stopped"]

    async def isolate(self) -> list[str]:
        await self._call("isolate")
        return []

    async def exec(
        self,
        command: Sequence[str],
        *,
        output: Path | None = None,
        timeout_seconds: float = 60.0,
        workdir: PurePath | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult:
        await self._call("exec")
        return ExecResult(0, False)

    async def put_file(self, source: Path, target: PurePath, *, mode: int | None = None) -> None:
        await self._call("put_file")

    async def put_tree(self, source: Path, target: PurePath) -> None:
        await self._call("put_tree")

    async def get_tree(self, source: PurePath, target: Path) -> None:
        await self._call("get_tree")

    async def read_file(self, path: PurePath, limit: int) -> bytes | None:
        await self._call("read_file")
        return None

    @contextlib.asynccontextmanager
    async def follow_file(self, path: PurePath, host_copy: Path) -> AsyncIterator[None]:
        yield  # agents write the host copy itself


def _make_directories(*directories: PurePath | None) -> None:
    for directory in directories:
        Path(str(directory)).mkdir(parents=True, exist_ok=True)


class FakeVerifier:
    def __init__(self, kind: FakeKind) -> None:
        self.kind = kind

    async def run(
        self, inputs: VerifierInputs, timeout_seconds: float, log: Callable[[str], None]
    ) -> VerifierRun:
        await self.kind.faults.at("verifier")
        return VerifierRun(0, False, {"reward": 1.0}, None, NETWORK_NOT_ISOLATED)


class FakeKind:
    """`EnvironmentKind` making `FakeEnvironment`s whose agents all follow `behaviour`; it
    stands in for the local env (its logical paths are the local env's host paths)."""

    name = "local"

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.faults = Faults()
        self.environments: list[FakeEnvironment] = []

    async def host_listen_address(self) -> str:
        return LOOPBACK

    def environment(self, trial: TrialPaths, task: Task, trial_id: str) -> FakeEnvironment:
        environment = FakeEnvironment(trial, task, self)
        self.environments.append(environment)
        return environment

    def verifier(self, trial: TrialPaths, task: Task, trial_id: str) -> FakeVerifier:
        return FakeVerifier(self)


class FaultyClients(ClientPool):
    """Real relay clients, except that the named operations fail (not retryable)."""

    def __init__(self, relay_url: str, failing: Sequence[str] = ()) -> None:
        super().__init__(relay_url)
        self.failing = set(failing)

    def client(self, keys: Keys) -> Any:
        return _FaultyClient(super().client(keys), self.failing)


class _FaultyClient:
    def __init__(self, client: Any, failing: set[str]) -> None:
        self._client = client
        self._failing = failing

    def __getattr__(self, name: str) -> Any:
        if name in self._failing:

            async def refused(**_kwargs: Any) -> Any:
                raise BuzzError("relay_error", f"{name} refused (injected)", retryable=False)

            return refused
        return getattr(self._client, name)


def job_context(
    tmp_path: Path,
    relay_url: str,
    kind: FakeKind,
    *,
    stable_clients: ClientPool | None = None,
    timeout_multiplier: float = 1.0,
) -> JobContext:
    """A job's services around the real relay and the oracle condition; no database."""
    state = BenchmarkState(
        paths=StatePaths(tmp_path / "state"),
        owner=Keys.generate(),
        user=Keys.generate(),
        relay=Keys.generate(),
        postgres_password="unused",
    )
    return JobContext(
        job_name="fake-job",
        job_paths=JobPaths(tmp_path / "jobs" / "fake-job"),
        condition=load_condition(
            PROJECT_ROOT / DEFAULT_MANIFEST, PROJECT_ROOT / DEFAULT_ENDPOINT_CONFIG
        ),
        stack=StackInfo(mode="external", relay_ws_url=relay_url, agent_relay_url=relay_url),
        environments=kind,
        state=state,
        options=TrialSettings(timeout_multiplier=timeout_multiplier),
        api_keys={},
        stable_clients=stable_clients or ClientPool(relay_url),
        registry=Registry(None),
        oracle=OracleHost(),
    )


def task() -> Task:
    return load_task(TASK)


def result_of(environment: FakeEnvironment) -> dict[str, Any]:
    return json.loads(environment.trial.result_json.read_text(encoding="utf-8"))
