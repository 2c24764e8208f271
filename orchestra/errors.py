"""The one base of the package's own exceptions, and the exit code each family ends a command with.

An `OrchestraError` is a problem a person can act on: its `str()` is the one-line message a
command prints (never a secret), and `exit_code` is the status the command ends with when the
error ends it. Each family sets the code its commands document (orchestrator.md §2.4,
buzz-cli.md §3, agent-harness.md §1.10 and §2.1, protocol.md §1.2); a command that documents
another code for the same error in one place (e.g. `orchestra stack status`) says so there.

Errors that are never shown to a person as such (a refused relay frame, a tool result handed to
the model, one failed LLM attempt) stay outside this family.
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
