"""What a finished verifier run amounts to, for either environment (orchestrator.md §9.4)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestra.documents.enums import VerifierNetwork
from orchestra.documents.trial import VerifierSummary
from orchestra.paths import VERIFIER_OUTPUT_NAME
from orchestra.verify.reward import (
    VerifierFailure,
    VerifierReportedError,
    VerifierTimeout,
    details_error,
    read_rewards,
)

NETWORK_NOT_ISOLATED = VerifierNetwork.NOT_ISOLATED
NETWORK_NONE = VerifierNetwork.NONE
#: How much of the verifier's output an error message quotes (its end: where errors are).
OUTPUT_TAIL_LINES = 15
OUTPUT_LINE_CHARS = 300


@dataclass(frozen=True)
class VerifierRun:
    exit_code: int | None
    timed_out: bool
    rewards: dict[str, float]
    details_error: str | None
    network: VerifierNetwork = NETWORK_NOT_ISOLATED

    def summary(self) -> VerifierSummary:
        """The result.json `verifier` object."""
        return VerifierSummary(
            exit_code=self.exit_code,
            timed_out=self.timed_out,
            network=self.network,
            details_error=self.details_error,
        )


def conclude_verifier_run(
    verifier_dir: Path,
    *,
    exit_code: int | None,
    timed_out: bool,
    timeout_seconds: float,
    network: VerifierNetwork,
) -> VerifierRun:
    """Read the rewards the script left in `verifier_dir` (a host directory).

    Raises a `VerifierFailure` subclass (with the `verifier` summary attached) when the
    verifier timed out, produced no valid reward, or reported an error in details.json.
    """
    error = details_error(verifier_dir)
    summary = VerifierRun(exit_code, timed_out, {}, error, network).summary()
    if timed_out:
        raise VerifierTimeout(
            f"verifier exceeded its timeout of {timeout_seconds:g} s"
            + explanation(verifier_dir, exit_code),
            verifier=summary,
        )
    try:
        rewards = read_rewards(verifier_dir)
    except VerifierFailure as failure:
        raise type(failure)(
            str(failure) + explanation(verifier_dir, exit_code), verifier=summary
        ) from None
    if error is not None:
        raise VerifierReportedError(
            f"verifier reported an error: {error}" + explanation(verifier_dir, exit_code),
            rewards=rewards,
            verifier=summary,
        )
    return VerifierRun(exit_code, False, rewards, None, network)


def explanation(verifier_dir: Path, exit_code: int | None) -> str:
    """What the verifier itself said: its exit code and the last lines of its output, so that
    an error shows the verifier's failure rather than the orchestrator's."""
    code = "was killed" if exit_code is None else f"exited {exit_code}"
    try:
        lines = (verifier_dir / VERIFIER_OUTPUT_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"; the verifier {code} and left no {VERIFIER_OUTPUT_NAME}"
    tail = [line[:OUTPUT_LINE_CHARS] for line in lines.rstrip().splitlines()[-OUTPUT_TAIL_LINES:]]
    if not tail:
        return f"; the verifier {code} and printed nothing"
    shown = "\n".join(f"  {line}" for line in tail)
    return f"; the verifier {code}; the end of verifier/{VERIFIER_OUTPUT_NAME}:\n{shown}"
