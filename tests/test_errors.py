"""`orchestra.errors`: one base, the exit code of each family, and the trial taxonomy's names."""

from __future__ import annotations

import pytest

from orchestra.agents.acp.pool import AgentInitError
from orchestra.agents.acp.relay import RelayUnavailable
from orchestra.agents.devmcp.workspace import WorkspaceError
from orchestra.agents.oracle.faults import OracleConfigError
from orchestra.buzz.errors import BuzzError
from orchestra.config.errors import ConfigError
from orchestra.config.manifest import ArtifactHashMismatch
from orchestra.errors import OrchestraError, TrialFailure
from orchestra.evidence.export import EvidenceExportError
from orchestra.settings import SettingError
from orchestra.stack.images import ImageError
from orchestra.stack.readiness import StackError
from orchestra.stack.select import ModeError
from orchestra.stack.state import StateError
from orchestra.stack.wheelhouse import WheelhouseError
from orchestra.verify.reward import VerifierFailure, VerifierTimeout


@pytest.mark.parametrize(
    ("family", "exit_code"),
    [
        # orchestrator.md §2.4: 1 usage/validation, 2 preflight or stack, 3 a trial errored.
        (ConfigError, 1),
        (ModeError, 1),
        (StackError, 2),
        (StateError, 2),
        (ImageError, 2),
        (WheelhouseError, 2),
        (TrialFailure, 3),
        # agent-harness.md §1.10, §2.1, §3.1: configuration and start-up 1, relay 2.
        (SettingError, 1),
        (OracleConfigError, 1),
        (AgentInitError, 1),
        (WorkspaceError, 1),
        (RelayUnavailable, 2),
    ],
)
def test_each_family_ends_a_command_with_its_documented_code(
    family: type[OrchestraError], exit_code: int
) -> None:
    assert issubclass(family, OrchestraError)
    assert family.exit_code == exit_code


def test_buzz_errors_carry_the_cli_code_of_their_category() -> None:
    # buzz-cli.md §3.
    codes = {
        category: BuzzError(category, "m").exit_code
        for category in ("user_error", "not_found", "network_error", "relay_error")
    }
    assert codes == {"user_error": 1, "not_found": 1, "network_error": 2, "relay_error": 2}
    assert BuzzError("key_error", "m").exit_code == 3
    assert BuzzError("error", "m").exit_code == 4
    assert BuzzError("conflict", "m").exit_code == 5
    assert isinstance(BuzzError("error", "m"), OrchestraError)


def test_trial_failures_are_named_by_their_class_unless_the_instance_says_otherwise() -> None:
    # orchestrator.md §12 names.
    for failure in (VerifierTimeout, ArtifactHashMismatch, EvidenceExportError):
        assert issubclass(failure, TrialFailure)
        assert failure("m").exception_type == failure.__name__
    assert VerifierFailure("m").exception_type == "VerifierFailure"

    class Classified(TrialFailure):
        def __init__(self, exception_type: str, message: str) -> None:
            super().__init__(message)
            self.exception_type = exception_type

    classified = Classified("ProvisioningError", "channel creation failed")
    assert classified.exception_type == "ProvisioningError"
    assert Classified.exception_type == "Classified"
    assert classified.exit_code == 3 and str(classified) == "channel creation failed"
