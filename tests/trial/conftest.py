"""The `trial` fixture: one real `run_trial` of reply-to-thread against the real relay, with a
fake environment whose agents are scripted coroutines (trial_fakes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from trial_fakes import (
    Behaviour,
    FakeEnvironment,
    FakeKind,
    FaultyClients,
    Trial,
    job_context,
    result_of,
    task,
)

from orchestra.documents.trial import TrialResult
from orchestra.trial.context import JobContext
from orchestra.trial.run import run_trial


@pytest.fixture
async def trial(relay_url: str, tmp_path: Path) -> AsyncIterator[Trial]:
    """`await trial(behaviour, failing=(), cancel_in=None, **ctx_options)`: run one trial of
    reply-to-thread; `cancel_in` cancels it as soon as that phase is entered."""
    contexts: list[JobContext] = []

    async def run(
        behaviour: Behaviour,
        *,
        failing: tuple[str, ...] = (),
        cancel_in: str | None = None,
        setup: Callable[[FakeKind, JobContext], None] = lambda _kind, _ctx: None,
    ) -> tuple[dict[str, Any], FakeEnvironment]:
        kind = FakeKind(behaviour)
        ctx = job_context(
            tmp_path, relay_url, kind, stable_clients=FaultyClients(relay_url, failing)
        )
        contexts.append(ctx)
        setup(kind, ctx)
        running: list[asyncio.Task[TrialResult]] = []
        cancelled: list[str] = []

        def on_update(result: TrialResult) -> None:
            if result.phase == cancel_in and not cancelled:
                cancelled.append(cancel_in)
                running[0].cancel()  # lands at the trial's next await, inside that phase

        ctx.on_trial_update = on_update
        running.append(asyncio.create_task(run_trial(ctx, task(), 1)))
        returned = await asyncio.wait_for(running[0], 120)
        assert cancelled == ([cancel_in] if cancel_in else [])
        [environment] = kind.environments
        written = result_of(environment)
        assert returned.model_dump(mode="json") == written  # the runner gets what is on disk
        return written, environment

    yield run
    for ctx in contexts:
        await ctx.stable_clients.close()
        await ctx.oracle.stop()
