"""What a finished verifier run amounts to, for either environment (orchestrator.md §9.4)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestra.documents.enums import VerifierNetwork
from orchestra.verify.reward import (
    VerifierFailure,
    VerifierReportedError,
    VerifierTimeout,
    details_error,
    read_rewards,
)

NETWORK_NOT_ISOLATED = VerifierNetwork.NOT_ISOLATED
NETWORK_NONE = VerifierNetwork.NONE


@dataclass(frozen=True)
class VerifierRun:
    exit_code: int | None
    timed_out: bool
    rewards: dict[str, float]
    details_error: str | None
    network: str = NETWORK_NOT_ISOLATED

    def summary(self) -> dict[str, object]:
        return {
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "network": self.network,
            "details_error": self.details_error,
        }


def conclude_verifier_run(
    verifier_dir: Path,
    *,
    exit_code: int | None,
    timed_out: bool,
    timeout_seconds: float,
    network: str,
) -> VerifierRun:
    """Read the rewards the script left in `verifier_dir` (a host directory).

    Raises a `VerifierFailure` subclass (with the `verifier` summary attached) when the
    verifier timed out, produced no valid reward, or reported an error in details.json.
    """
    error = details_error(verifier_dir)
    summary = VerifierRun(exit_code, timed_out, {}, error, network).summary()
    if timed_out:
        raise VerifierTimeout(
            f"verifier exceeded its timeout of {timeout_seconds:g} s", verifier=summary
        )
    try:
        rewards = read_rewards(verifier_dir)
    except VerifierFailure as failure:
        failure.verifier = summary
        raise
    if error is not None:
        raise VerifierReportedError(
            f"verifier reported an error: {error}", rewards=rewards, verifier=summary
        )
    return VerifierRun(exit_code, False, rewards, None, network)
