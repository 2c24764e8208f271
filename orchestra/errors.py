"""The one base of the package's own exceptions, and the exit code each family ends a command with.

An `OrchestraError` is a problem a person can act on: its `str()` is the one-line message a
command prints (never a secret), and `exit_code` is the status the command ends with when the
error ends it. Each family sets the code its commands document (orchestrator.md §2.4,
buzz-cli.md §3, agent-harness.md §1.10 and §2.1, protocol.md §1.2); a command that documents
another code for the same error in one place (e.g. `orchestra stack status`) says so there.

The tree (exit codes in brackets; `tests/test_errors.py` holds it to the code):

    OrchestraError [1]
    ├── ConfigError (config/errors) ── ConfigErrors, DocumentError (documents/io),
    │                                  PlanError (jobs/plan)
    ├── SettingError (settings; also a ValueError) ── ConfigError (relay/config),
    │                                                 OracleConfigError (agents/oracle/faults)
    ├── ModeError (stack/select), JobConfigMismatch (jobs/layout),
    │   JobInUse (jobs/leftovers) [2]
    ├── CompareInputError (report/compare/comparison), ExportError (export/sources),
    │   DatabaseError (results/schema), ScaffoldError (taskkit/scaffold),
    │   Unplayable (taskkit/case_replay)
    ├── Refused (run/outcome) [1 usage, 2 preflight], Preflight (run/preflight) [2]
    │   └── MissingKeys
    ├── RegradeError (run/regrade), SmokeFailed (run/smoke) [2]
    ├── MachineFault (run/driver) [130, as an interrupted run]
    ├── StackError (stack/readiness) [2], StateError (stack/state) [2], ImageError
    │   (stack/images) [2], WheelhouseError (stack/wheelhouse) [2], LocalImageError
    │   (trial/env/local_image) [2], StoreUnreadable (stack/stored_events) [2]
    ├── RayMissing [1], ClusterUnavailable [2] (executors/cluster)
    ├── EnvCommandError (trial/env/protocol) [2] ── DockerEnvError (trial/env/container)
    ├── DatabaseUnavailable (relay/server) [2], BuzzError (buzz/errors) [its category's code]
    ├── AgentInitError (agents/acp/pool), RelayUnavailable (agents/acp/relay) [2],
    │   WorkspaceError (agents/devmcp/workspace), ToolServerError (agents/agent/tools)
    └── TrialFailure [3]: the trial ends in `error`, its type named as §12 names it
        ├── TrialError (trial/errors), AgentProcessExited (trial/completion),
        │   StackUnavailable (stack/watch), ArtifactHashMismatch (config/manifest),
        │   EvidenceExportError (evidence/export), InstallError (executors/install)
        └── VerifierFailure (verify/reward) ── VerifierTimeout, VerifierReportedError,
                                               RewardFileNotFound, RewardFileEmpty,
                                               RewardParseError

Outside the tree, on purpose: signals caught where they are raised and never shown to a person
as such: a refused relay frame (`Rejected`, `_Closed` in relay/), a tool result handed to the
model (`FileToolError`), one failed LLM attempt (`LLMError`), a prompt no trimming can shorten
(`ContextExhausted`), a model output the server could not parse (`InvalidOutput`), a trial on a
node not yet hosted (`NoNodeHost`) or too large to send back (`PackTooLarge`); and the `ValueError`s of the wire formats (nostr, NIP-44, relay frames).
"""

from __future__ import annotations


class OrchestraError(Exception):
    """A problem the person who ran the command can act on; ends it with `exit_code`."""

    #: 1 is every command's "bad configuration or usage" code.
    exit_code: int = 1


class TrialFailure(OrchestraError):
    """A failure that ends one trial with status `error`, classified by `exception_type`, one of
    the names of orchestrator.md §12 (the class name unless the instance says otherwise). The
    benchmark then exits 3 (§2.4): its jobs ran, some trial did not score."""

    exit_code = 3
    exception_type: str = "TrialFailure"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # A plain class attribute, not a property: an instance may still set its own.
        if "exception_type" not in cls.__dict__:
            cls.exception_type = cls.__name__
