"""`orchestra.errors`: one base, the exit code of each family, and the trial taxonomy's names."""

from __future__ import annotations

import ast
import re

import pytest

import orchestra.errors
from orchestra.agents.acp.pool import AgentInitError
from orchestra.agents.acp.relay import RelayUnavailable
from orchestra.agents.agent.tools import ToolServerError
from orchestra.agents.devmcp.workspace import WorkspaceError
from orchestra.agents.oracle.faults import OracleConfigError
from orchestra.buzz.errors import BuzzError
from orchestra.config.errors import ConfigError
from orchestra.config.manifest import ArtifactHashMismatch
from orchestra.documents.enums import ErrorType
from orchestra.errors import OrchestraError, TrialFailure
from orchestra.evidence.export import EvidenceExportError
from orchestra.executors.install import InstallError
from orchestra.export.sources import ExportError
from orchestra.jobs.layout import JobConfigMismatch
from orchestra.paths import PROJECT_ROOT, TASK_TEMPLATE_DIR
from orchestra.report.compare.comparison import CompareInputError
from orchestra.results.schema import DatabaseError
from orchestra.run.driver import MachineFault
from orchestra.run.outcome import Refused, RunEnd, refusal_of
from orchestra.run.preflight import Preflight
from orchestra.settings import SettingError
from orchestra.stack.images import ImageError
from orchestra.stack.readiness import StackError
from orchestra.stack.select import ModeError
from orchestra.stack.state import StateError
from orchestra.stack.wheelhouse import WheelhouseError
from orchestra.trial.completion import AgentProcessExited
from orchestra.trial.env.local_image import LocalImageError
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


# --- one hierarchy, drawn in orchestra/errors.py ---------------------------------------------

#: Signals caught where they are raised, never shown to a person as such (errors.py says why).
OUTSIDE_THE_TREE = {
    "Rejected",
    "_Closed",
    "FileToolError",
    "LLMError",
    "ContextExhausted",
    "InvalidOutput",
    "NoNodeHost",
    "PackTooLarge",
}


def class_bases() -> dict[str, set[str]]:
    """Every class of the package by name -> the names of its bases (as written)."""
    found: dict[str, set[str]] = {}
    for path in (PROJECT_ROOT / "orchestra").rglob("*.py"):
        if TASK_TEMPLATE_DIR in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = {base.id for base in node.bases if isinstance(base, ast.Name)}
                found.setdefault(node.name, set()).update(names)
    return found


def test_every_exception_of_ours_is_in_the_tree_or_named_outside_it() -> None:
    bases = class_bases()
    straight = {name for name, of in bases.items() if "Exception" in of}
    assert straight - {"OrchestraError"} == OUTSIDE_THE_TREE
    tree, grown = {"OrchestraError"}, True
    while grown:
        below = {name for name, of in bases.items() if of & tree}
        grown = not below <= tree
        tree |= below
    drawn = orchestra.errors.__doc__ or ""
    missing = [name for name in tree | OUTSIDE_THE_TREE if not re.search(rf"\b{name}\b", drawn)]
    assert sorted(missing) == []


@pytest.mark.parametrize(
    ("family", "exit_code"),
    [
        (JobConfigMismatch, 1),
        (CompareInputError, 1),
        (ExportError, 1),
        (DatabaseError, 1),
        (ToolServerError, 1),
        (Preflight, 2),
        (LocalImageError, 2),
        (MachineFault, 130),  # orchestrator.md §2.4: a full disk ends a run as an interrupt
        (AgentProcessExited, 3),
        (InstallError, 3),
    ],
)
def test_the_errors_that_joined_the_tree_keep_their_codes(
    family: type[OrchestraError], exit_code: int
) -> None:
    assert issubclass(family, OrchestraError) and family.exit_code == exit_code


def test_a_refusal_ends_with_the_code_of_how_it_ends() -> None:
    assert Refused(RunEnd.USAGE, "m").exit_code == 1
    assert Refused(RunEnd.PREFLIGHT, "m").exit_code == 2
    assert refusal_of(Refused(RunEnd.PREFLIGHT, "m")) is RunEnd.PREFLIGHT


def test_trial_failures_that_joined_keep_their_section_12_names() -> None:
    assert AgentProcessExited("m").exception_type == ErrorType.AGENT_PROCESS_EXITED
    assert InstallError("m").exception_type == ErrorType.INTERNAL_ERROR
