"""The stub trial of bench/scale.py (scale-out.md §8): the jobs runner's `trial_runner`.

It has `orchestra.trial.run.run_trial`'s signature (`orchestra.jobs.executor.TrialFunction`) and writes what a trial writes through the
same code (`TrialState`, `orchestra.trial.record`): the trial directory with its `config.json`,
a `result.json` rewritten at each of the six phases, `trial.log` and the verifier's
`reward.json`; in between it sleeps `STUB_PHASE_SECONDS`. The final result is a realistic
one: scored (one in ten with a failing dimension and reward 0), tokens and cost per agent.
A module-level function, so an executor can send it to another process by name.
"""

from __future__ import annotations

import asyncio
import os
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from orchestra.config.task import Task
from orchestra.documents.enums import Accounting, Phase, TrialStatus, VerifierNetwork
from orchestra.documents.trial import (
    AgentTokens,
    RetriedAttempt,
    TrialResult,
    TrialTokens,
    VerifierSummary,
)
from orchestra.jsonio import write_json_atomic
from orchestra.trial.accounting import TrialAccounting
from orchestra.trial.context import JobContext
from orchestra.trial.record import enter_phase, result_document, write_result, write_trial_config
from orchestra.trial.state import TrialNaming, TrialState

#: the stub's sleep per phase (the environment variable overrides it, in seconds)
STUB_PHASE_SECONDS = float(os.environ.get("SCALE_STUB_PHASE_SECONDS", "0.005"))
PRICE_PER_TOKEN_USD = 2e-7


@dataclass(frozen=True)
class Moment:
    cpu: float  # the process's CPU seconds
    wall: float  # monotonic


#: when this process started its first stub trial, and when one last returned (bench/scale.py
#: measures between them; `reset` starts over)
FIRST_CALL: Moment | None = None
LAST_DONE: Moment | None = None


def now() -> Moment:
    return Moment(time.process_time(), time.monotonic())


def reset() -> None:
    global FIRST_CALL, LAST_DONE
    FIRST_CALL = LAST_DONE = None


async def stub_trial(
    ctx: JobContext,
    task: Task,
    attempt: int,
    retried_from: Sequence[RetriedAttempt] = (),
    named: TrialNaming | None = None,
) -> TrialResult:
    global FIRST_CALL, LAST_DONE
    if FIRST_CALL is None:
        FIRST_CALL = now()
    state = TrialState.new(ctx, task, attempt, named)
    state.retried_from = list(retried_from)
    write_trial_config(state, ctx)
    for phase in Phase:
        enter_phase(state, phase)
        await asyncio.sleep(STUB_PHASE_SECONDS)
    failed = zlib.crc32(f"{task.name}#{attempt}".encode()) % 10 == 0
    rewards = {"reward": 0.0 if failed else 1.0, "threaded": 0.0 if failed else 1.0}
    write_json_atomic(state.paths.reward_json, rewards)
    state.grading.rewards, state.grading.reward = rewards, rewards["reward"]
    state.grading.verifier = VerifierSummary(
        exit_code=0, timed_out=False, network=VerifierNetwork.NOT_ISOLATED, details_error=None
    )
    state.finalize.accounting = _accounting(state, attempt)
    state.finalize.agent_active_seconds = round(4 * STUB_PHASE_SECONDS, 3)
    state.recorder.finish(TrialStatus.SCORED)
    write_result(state)
    state.recorder.close()
    await state.trial_clients.close()
    LAST_DONE = now()
    return result_document(state)


def _accounting(state: TrialState, attempt: int) -> TrialAccounting:
    per_agent = {}
    for index, slot in enumerate(state.slots):
        prompt = 12_000 + 97 * attempt + 1_000 * index
        output = 600 + attempt % 50
        per_agent[slot.agent_id] = AgentTokens(
            input=prompt,
            cached_input=prompt // 2,
            output=output,
            turns=3,
            cost_usd=round((prompt + 4 * output) * PRICE_PER_TOKEN_USD, 6),
        )
    usages = per_agent.values()
    tokens = TrialTokens(
        input=sum(usage.input for usage in usages),
        cached_input=sum(usage.cached_input for usage in usages),
        output=sum(usage.output for usage in usages),
        per_agent=per_agent,
    )
    cost = sum(usage.cost_usd for usage in usages)
    return TrialAccounting(tokens, cost, Accounting.EVENT_LOG, False)
