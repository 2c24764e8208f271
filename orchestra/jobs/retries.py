"""Reruns of harness errors inside the job (`--retries N`, docs/decisions.md D57).

A trial that ends `error` for a cause outside the agent under test is rerun in the same job, up
to N times; each failed attempt moves to `.superseded/` with its result, and the final trial's
`result.json` lists them in `retried_from`. Agent outcomes (timeouts, budgets, wrong answers)
are scores and never rerun; errors a rerun cannot heal (a refused key, a task's own verifier,
a configuration problem, a bug) are not rerun either, nor a provider failure the agent already
retried until its retry budget was used up (docs/decisions.md D87: another attempt would only spend
the same budget against the same provider; the circuit breaker decides whether the run goes on).
"""

from __future__ import annotations

from orchestra.agents.llm.budget import budget_used_up
from orchestra.documents.enums import ErrorType, TrialStatus
from orchestra.documents.trial import RetriedAttempt, TrialResult
from orchestra.jobs.layout import supersede_directory
from orchestra.paths import JobPaths

#: Harness faults that another attempt may not meet (orchestrator.md §12).
RETRIED_ERRORS = frozenset(
    {
        ErrorType.PROVIDER_UNAVAILABLE,
        ErrorType.STACK_UNAVAILABLE,
        ErrorType.ENVIRONMENT_START_ERROR,
        ErrorType.PROVISIONING_ERROR,
        ErrorType.FIXTURE_SETUP_ERROR,
        ErrorType.AGENT_LAUNCH_ERROR,
        ErrorType.AGENT_READINESS_TIMEOUT,
        ErrorType.TASK_POST_ERROR,
        ErrorType.SCRIPTED_EVENT_ERROR,
        ErrorType.EVIDENCE_EXPORT_ERROR,
    }
)


def retried(result: TrialResult) -> bool:
    """The trial ended in a harness error another attempt may not meet."""
    info = result.exception_info
    return (
        result.status is TrialStatus.ERROR
        and info is not None
        and info.exception_type in RETRIED_ERRORS
        and not budget_used_up(info.exception_message)
    )


def will_rerun(result: TrialResult, retries: int, stopped: bool) -> bool:
    """The slot runs again after this result: a retried error, reruns left, the run going on."""
    return not stopped and len(result.retried_from) < retries and retried(result)


def supersede(paths: JobPaths, result: TrialResult) -> RetriedAttempt:
    """Move the failed attempt's directory to `.superseded/` (never deleted)."""
    assert result.exception_info is not None
    supersede_directory(paths, result.trial_name)
    return RetriedAttempt(
        trial_name=result.trial_name, exception_type=result.exception_info.exception_type
    )
