"""The state directory's secrets file `state.json` (orchestrator.md §5.2)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from orchestra.errors import OrchestraError
from orchestra.jsonio import write_json_atomic
from orchestra.nostr.keys import Keys
from orchestra.paths import StatePaths

STATE_KEYS = ("owner_secret_key", "user_secret_key", "postgres_password", "relay_private_key")
SECRET_KEY_NAMES = ("owner_secret_key", "user_secret_key", "relay_private_key")


class StateError(OrchestraError):
    """The state file exists but cannot be used; the message names the file and key."""

    exit_code = 2


@dataclass(frozen=True)
class BenchmarkState:
    """Persistent secrets. Public keys are derived, never stored; `repr` hides everything."""

    paths: StatePaths
    owner: Keys
    user: Keys
    relay: Keys
    postgres_password: str

    def __repr__(self) -> str:
        return f"BenchmarkState(root={self.paths.root}, user={self.user.pubkey})"


def _fresh_secrets() -> dict[str, str]:
    return {
        "owner_secret_key": Keys.generate().secret_hex,
        "user_secret_key": Keys.generate().secret_hex,
        "postgres_password": secrets.token_urlsafe(24),
        "relay_private_key": Keys.generate().secret_hex,
    }


def ensure_state_dir(root: Path) -> StatePaths:
    paths = StatePaths(root)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    return paths


def _secret_key(file: Path, name: str, value: object) -> Keys:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return Keys.from_secret(bytes.fromhex(value))
    raise StateError(f"{file}: {name}: not a 32-byte hex secret key")


def load_state(root: Path, *, create: bool = True) -> BenchmarkState:
    """Read `state.json`, generating it once (mode 0600) when missing."""
    paths = ensure_state_dir(root) if create else StatePaths(root)
    file = paths.state_json
    if not file.exists():
        if not create:
            raise StateError(f"{file}: missing (run `orchestra stack up` or a benchmark first)")
        write_json_atomic(file, _fresh_secrets(), mode=0o600)
    os.chmod(file, 0o600)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise StateError(f"{file}: unreadable ({type(error).__name__})") from None
    if not isinstance(data, dict) or set(data) != set(STATE_KEYS):
        raise StateError(f"{file}: must hold exactly the keys {', '.join(STATE_KEYS)}")
    keys = {name: _secret_key(file, name, data[name]) for name in SECRET_KEY_NAMES}
    if not isinstance(data["postgres_password"], str) or not data["postgres_password"]:
        raise StateError(f"{file}: postgres_password: must be a non-empty string")
    return BenchmarkState(
        paths=paths,
        owner=keys["owner_secret_key"],
        user=keys["user_secret_key"],
        relay=keys["relay_private_key"],
        postgres_password=data["postgres_password"],
    )


def state_secrets(state: BenchmarkState) -> dict[str, str]:
    """The secrets of `state.json` (every key of STATE_KEYS), to seed another state dir with:
    a Ray node's stack then signs and derives exactly what this one does (scale-out.md §4)."""
    return {
        "owner_secret_key": state.owner.secret_hex,
        "user_secret_key": state.user.secret_hex,
        "postgres_password": state.postgres_password,
        "relay_private_key": state.relay.secret_hex,
    }


def seeded_state(root: Path, secrets: dict[str, str]) -> BenchmarkState:
    """A state dir at `root` holding `secrets` (written 0600 when missing), loaded."""
    paths = ensure_state_dir(root)
    if not paths.state_json.exists():
        write_json_atomic(paths.state_json, secrets, mode=0o600)
    return load_state(root)
