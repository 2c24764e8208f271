"""Reading a verifier's reward and details files (orchestrator.md §9.4)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from orchestra.documents.trial import VerifierSummary
from orchestra.errors import TrialFailure


class VerifierFailure(TrialFailure):
    """A verifier outcome that makes the trial `error`; the class name is the exception type."""

    def __init__(
        self,
        message: str,
        *,
        rewards: dict[str, float] | None = None,
        verifier: VerifierSummary | None = None,
    ) -> None:
        super().__init__(message)
        self.rewards = rewards
        self.verifier = verifier  # the result.json `verifier` object, when the script ran


class VerifierTimeout(VerifierFailure):
    pass


class RewardFileNotFound(VerifierFailure):
    pass


class RewardFileEmpty(VerifierFailure):
    pass


class RewardParseError(VerifierFailure):
    pass


class VerifierReportedError(VerifierFailure):
    pass


def _is_finite_number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _reject_constants(name: str) -> float:
    raise ValueError(f"non-finite number {name}")


def parse_reward_json(text: str, path: Path) -> dict[str, float]:
    try:
        value = json.loads(text, parse_constant=_reject_constants)
    except ValueError as error:
        raise RewardParseError(f"{path}: {error}") from error
    if not isinstance(value, dict) or not value:
        raise RewardParseError(f"{path}: not a non-empty JSON object")
    for key, number in value.items():
        if not _is_finite_number(number):
            raise RewardParseError(f"{path}: {key} is not a finite number ({number!r})")
    if "reward" not in value:
        raise RewardParseError(f"{path}: missing reward")
    return {key: float(number) for key, number in value.items()}


def parse_reward_txt(text: str, path: Path) -> dict[str, float]:
    try:
        number = float(text.strip())
    except ValueError as error:
        raise RewardParseError(f"{path}: not a number: {text.strip()[:80]!r}") from error
    if not math.isfinite(number):
        raise RewardParseError(f"{path}: not a finite number")
    return {"reward": number}


def read_rewards(verifier_dir: Path) -> dict[str, float]:
    """reward.json is authoritative when present (no fallback even if invalid), else reward.txt."""
    for name, parse in (("reward.json", parse_reward_json), ("reward.txt", parse_reward_txt)):
        path = verifier_dir / name
        if not path.exists():
            continue
        data = path.read_bytes()
        if not data:
            raise RewardFileEmpty(f"{path} is empty")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RewardParseError(f"{path}: not UTF-8") from error
        return parse(text, path)
    raise RewardFileNotFound(f"no reward.json or reward.txt in {verifier_dir}")


def details_error(verifier_dir: Path) -> str | None:
    """The top-level `error` of details.json when it parses as an object carrying one."""
    try:
        details: Any = json.loads((verifier_dir / "details.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(details, dict) and "error" in details:
        return str(details["error"])
    return None
