"""Fixtures for the `buzz` client library and CLI tests (real relay subprocess from tests/conftest.py)."""

import asyncio
import io
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from orchestra.buzz import BuzzClient
from orchestra.buzz.cli import run
from orchestra.nostr.keys import Keys


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def error(self) -> dict[str, Any]:
        lines = self.stderr.strip().splitlines()
        return json.loads(lines[-1])

    @property
    def warnings(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stderr.splitlines() if '"warning"' in line]


def run_cli(argv: list[str], stdin: bytes = b"") -> CliResult:
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, io.BytesIO(stdin), out, err)
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
async def make_client(relay_url: str) -> AsyncIterator[Callable[..., BuzzClient]]:
    """`make_client(keys=None, url=None)`: a library client for a fresh (or given) identity."""
    clients: list[BuzzClient] = []

    def make(keys: Keys | None = None, url: str | None = None) -> BuzzClient:
        client = BuzzClient.from_keys(url or relay_url, keys or Keys.generate(), timeout=10.0)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
def buzz(relay_url: str) -> Callable[..., Any]:
    """`await buzz(client_or_keys, *argv, stdin=b"")`: the CLI in-process (own thread and loop)."""

    async def invoke(identity: BuzzClient | Keys, *argv: str, stdin: bytes = b"") -> CliResult:
        keys = identity._keys if isinstance(identity, BuzzClient) else identity
        full = ["--relay", relay_url, "--private-key", keys.secret_hex, "--timeout", "10", *argv]
        return await asyncio.to_thread(run_cli, full, stdin)

    return invoke


@dataclass
class Team:
    """A private channel whose owner and members have profiles (names chosen for §9 cases)."""

    channel: str
    owner: BuzzClient
    members: dict[str, BuzzClient]  # display name → client
    outsider: BuzzClient

    def pubkey(self, name: str) -> str:
        return self.members[name].pubkey


TEAM_NAMES = ("Bob", "John Vincent Doe", "Taylor", "Taylor Morgan Lee", "Sam", "sam")


@pytest.fixture
async def team(make_client: Callable[..., BuzzClient]) -> Team:
    owner, outsider = make_client(), make_client()
    members = {name: make_client() for name in TEAM_NAMES}
    await asyncio.gather(
        owner.users_set_profile(name="Alice"),
        outsider.users_set_profile(name="Olivia"),
        *(
            client.users_set_profile(name=name, about=f"about {name}")
            for name, client in members.items()
        ),
    )
    created = await owner.channels_create(name="team", visibility="private")
    channel = created["channel_id"]
    for client in members.values():
        await owner.channels_add_member(channel=channel, pubkey=client.pubkey, role="member")
    members["Alice"] = owner
    return Team(channel, owner, members, outsider)
