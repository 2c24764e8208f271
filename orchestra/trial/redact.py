"""Secret hygiene: redact this trial's secrets from every text file it wrote (§7.15)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestra.agents.oracle.registry import oracle_token
from orchestra.documents.trial import SecretScan
from orchestra.nostr.keys import Keys

if TYPE_CHECKING:
    from orchestra.trial.context import JobContext
    from orchestra.trial.state import TrialState

REDACTED = b"[REDACTED]"


def secret_strings(keys: Iterable[Keys], api_keys: Iterable[str]) -> list[str]:
    """Hex and nsec forms of every secret key, plus API-key values as written and as they
    appear inside a JSON string; longest first, so that an escaped form is replaced whole and
    a JSON file stays valid (the replacement needs no escaping)."""
    values: set[str] = set()
    for key in keys:
        values.add(key.secret_hex)
        values.add(key.nsec)
    for value in api_keys:
        if value:
            values.add(value)
            values.update(
                json.dumps(value, ensure_ascii=escaped)[1:-1] for escaped in (False, True)
            )
    return sorted(values, key=len, reverse=True)


def trial_secrets(state: TrialState, ctx: JobContext) -> list[str]:
    """Every secret of this trial (§7.15): its identities' keys, the API keys, oracle tokens."""
    setup = state.setup
    keys = list(setup.agent_keys.values())
    if setup.user is not None:
        keys.append(setup.user.keys)
    keys += [identity.keys for _, identity in setup.directory]
    secrets = secret_strings(keys, ctx.api_keys.values())
    if setup.oracle_registered:
        secrets += [oracle_token(state.trial_id, slot.agent_id) for slot in state.slots]
    return secrets


def redact_tree(root: Path, secrets: list[str]) -> SecretScan:
    """Replace every occurrence in files under `root`; what was replaced, for result.json.

    Works on bytes so that files of any encoding are scanned and left otherwise untouched.
    """
    needles = [s.encode("utf-8") for s in secrets]
    redactions = 0
    files: list[str] = []
    for path in sorted(_regular_files(root)):
        data = path.read_bytes()
        count = 0
        for needle in needles:
            hits = data.count(needle)
            if hits:
                data = data.replace(needle, REDACTED)
                count += hits
        if count:
            path.write_bytes(data)
            redactions += count
            files.append(path.relative_to(root).as_posix())
    return SecretScan(redactions=redactions, files=files)


def redact_text(text: str, secrets: list[str]) -> str:
    """`text` with every secret replaced (an error message may quote a provider's answer)."""
    for secret in secrets:
        text = text.replace(secret, REDACTED.decode())
    return text


def redact_value(value: Any, secrets: list[str]) -> Any:
    """A JSON-shaped value with every secret out of every string in it (§8.9, §8.10)."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, list):
        return [redact_value(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: redact_value(item, secrets) for key, item in value.items()}
    return value


def _regular_files(root: Path) -> Iterator[Path]:
    """Files under `root`, symlinks neither followed nor listed (`scandir`: no stat per entry)."""
    pending = [root]
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except FileNotFoundError:  # removed meanwhile: nothing left to scan there
            continue
        with entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path)
