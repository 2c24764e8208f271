"""One trial, step by step (orchestrator.md §7.2), in the local environment."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Coroutine
from typing import Any

from orchestra.agents.oracle.registry import oracle_token
from orchestra.jsonio import write_json_atomic
from orchestra.trial import provision
from orchestra.trial.accounting import trial_accounting
from orchestra.trial.budget import budget_exceeded
from orchestra.trial.completion import AgentProcessExited, CompletionRules, CompletionWatch
from orchestra.trial.errors import CANCELLED, TrialError, classified, exception_info, uncancel
from orchestra.trial.grading import TrialGrading
from orchestra.trial.identities import Identity
from orchestra.trial.observer import StackUnavailable
from orchestra.trial.redact import redact_tree, secret_strings
from orchestra.trial.setup import TrialSetup

SETUP_SECONDS = 300.0
USAGE_SETTLE_SECONDS = 30.0


class Trial(TrialSetup, TrialGrading):
    """Runs steps 1-21; errors skip the remaining work steps but never stop/collect/finalize."""

    # --- the whole trial ---------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        """Never raises except for a second cancellation; the result is always written."""
        self.paths.root.mkdir(parents=True)
        write_json_atomic(self.paths.config_json, self._trial_config())
        self.recorder.enter("setup")
        failure: BaseException | None = None
        try:
            await self._work()
        except asyncio.CancelledError:
            self.cancelled = True
            uncancel()
        except Exception as error:
            failure = error
        if failure is not None:
            self._record_failure(failure)
        await self._settle_usage()
        await self._uninterrupted(self._teardown())
        if failure is None and not self.cancelled:
            await self._grade()
        await self._uninterrupted(self._finalize())
        return self.recorder.result

    async def _uninterrupted(self, step: Coroutine[Any, Any, None]) -> None:
        """Stopping and finalizing must complete: a cancellation only marks the trial."""
        task = asyncio.ensure_future(step)
        while True:
            try:
                await asyncio.shield(task)
                return
            except asyncio.CancelledError:
                if task.done():
                    raise
                self.cancelled = True
                uncancel()

    def _record_failure(self, error: BaseException) -> None:
        info = exception_info(error, self.recorder.result["phase"])
        self.recorder.result["exception_info"] = info
        self.recorder.log(f"error {info['exception_type']}: {info['exception_message']}")
        self.recorder.log(info["exception_traceback"].rstrip())

    async def _work(self) -> None:
        try:
            async with asyncio.timeout(SETUP_SECONDS):
                await self._setup()
        except TimeoutError:
            raise TrialError("InternalError", f"setup exceeded {SETUP_SECONDS:g} s") from None
        self.recorder.enter("agent")
        await self._agent_phase()

    # --- agent phase: steps 11-14 --------------------------------------------------------------

    async def _agent_phase(self) -> None:
        assert self.channel_id is not None and self.user is not None and self.observer is not None
        orchestrator_pubkey = self.agent_keys[self.orchestrator_id].pubkey
        user_client = self._user_client()
        content = f"@{self.orchestrator_id} {self.task.instruction()}"
        with classified("TaskPostError"):
            self.task_event_id = await provision.send_message(
                user_client, self.channel_id, content, mention=[orchestrator_pubkey]
            )
        if self.task_event_id is None:
            raise TrialError("TaskPostError", "the task message returned no event id")
        accepted_at = time.monotonic()  # the budget clock starts when the task is accepted
        self.buzz["task_event_id"] = self.task_event_id
        if self.oracle_registered and self.ctx.oracle.server is not None:
            self.ctx.oracle.server.set_task_event(self.trial_id, self.task_event_id)
        self.recorder.write()
        await self._post_scripted(orchestrator_pubkey)
        agent_seconds, _ = self.timeouts
        self.watch = CompletionWatch(
            CompletionRules(
                orchestrator_id=self.orchestrator_id,
                orchestrator_pubkey=orchestrator_pubkey,
                solo=self.manifest.is_solo,
                scripted_event_ids=[row["event_id"] for row in self.scripted],
            ),
            self.observer,
            {agent_id: f.state for agent_id, f in self.followers.items()},
            self.agents,
            self._budget_check,
            self._describe_exit,
        )
        try:
            self.completion = await self.watch.wait(
                agent_seconds - (time.monotonic() - accepted_at)
            )
        except AgentProcessExited as error:
            raise TrialError("AgentProcessExited", str(error)) from error
        except StackUnavailable as error:
            raise TrialError("StackUnavailable", str(error)) from error
        self.recorder.result["stop_reason"] = self.completion.stop_reason
        self.recorder.result["budget_exceeded"] = self.completion.budget_exceeded
        self.buzz["completion_message_id"] = self.completion.completion_message_id
        self.recorder.log(f"agent phase ended: {self.completion.stop_reason}")

    async def _post_scripted(self, orchestrator_pubkey: str) -> None:
        assert self.channel_id is not None and self.user is not None
        actors = {identity_id: identity for identity_id, identity in self._directory_by_id()}
        for message in self.task.fixture.scripted_messages:
            actor = self.user if message.actor == "user" else actors[message.actor]
            client = self.ctx.stable_clients.client(actor.keys)
            reply_to = self.task_event_id if message.reply_to_task else None
            with classified("ScriptedEventError"):
                event_id = await provision.send_message(
                    client,
                    self.channel_id,
                    message.render(self.orchestrator_id, self.user.name),
                    mention=[orchestrator_pubkey] if message.mention_orchestrator else None,
                    reply_to=reply_to,
                )
            if event_id is None:
                raise TrialError(
                    "ScriptedEventError",
                    f'scripted event "{message.label}" did not return an event ID',
                )
            self.scripted.append(
                {
                    "label": message.label,
                    "event_id": event_id,
                    "actor": message.actor,
                    "reply_to_event_id": reply_to,
                }
            )
        self.buzz["scripted_events"] = self.scripted

    def _directory_by_id(self) -> list[tuple[str, Identity]]:
        return [(entry.key, identity) for entry, identity in self.directory]

    def _budget_check(self) -> dict[str, Any] | None:
        states = {agent_id: f.state for agent_id, f in self.followers.items()}
        return budget_exceeded(self.manifest, self.slots, states)

    # --- teardown: steps 15-17 ------------------------------------------------------------

    async def _settle_usage(self) -> None:
        """Step 15: let turns still in flight end; an interruption skips straight to stopping."""
        self.recorder.enter("teardown")
        completion = self.completion
        if (
            self.watch is not None
            and completion is not None
            and completion.stop_reason in ("done_message", "turn_end")
            and not self.cancelled
        ):
            try:
                await self.watch.wait_turns_end(USAGE_SETTLE_SECONDS)
            except asyncio.CancelledError:
                self.cancelled = True
                uncancel()

    async def _teardown(self) -> None:
        """Steps 16-17: stop every process, collect logs; never interrupted."""
        for note in await self.environment.stop_all(list(self.agents.values()), self.ctx.hurry):
            self.recorder.log(note)
        if self.oracle_registered and self.ctx.oracle.server is not None:
            self.ctx.oracle.server.unregister(self.trial_id)
        try:
            await self.environment.collect_logs()
        except Exception as error:  # best effort (§7.2 step 17)
            self.recorder.log(f"collecting logs failed: {type(error).__name__}: {error}")
        for task in self.follow_tasks:
            task.cancel()
        await asyncio.gather(*self.follow_tasks, return_exceptions=True)
        for follower in self.followers.values():
            for note in follower.state.notes:
                self.recorder.log(f"{follower.path.name}: {json.dumps(note, sort_keys=True)}")
        if self.observer is not None:
            await self.observer.close()

    # --- finalize: steps 20-21 ----------------------------------------------------------------

    async def _finalize(self) -> None:
        self.recorder.enter("finalize")
        try:
            await self._archive()
        except Exception as error:
            self.recorder.log(f"archive failed: {type(error).__name__}: {error}")
        await self.trial_clients.close()
        try:
            await self.environment.close()
        except Exception as error:
            self.recorder.log(f"removing the environment failed: {type(error).__name__}: {error}")
        self._account()
        self._redact()
        self.recorder.result["timings"]["agent_active_seconds"] = round(
            sum((f.state.active_seconds for f in self.followers.values()), 0.0), 3
        )
        if self.cancelled:
            self.recorder.result["exception_info"] = self.recorder.result[
                "exception_info"
            ] or exception_info(TrialError(CANCELLED, "interrupted"), self.recorder.result["phase"])
            status = "cancelled"
        elif self.recorder.result["exception_info"] is not None:
            status = "error"
        else:
            status = "scored" if self.recorder.result["reward"] is not None else "error"
        self.recorder.finish(status)

    async def _archive(self) -> None:
        # an interrupted trial goes from stop and log collection straight to finalize (§7.6)
        if self.channel_id is None or self.ctx.options.keep_channels or self.cancelled:
            return
        await provision.archive_channel(self._user_client(), self.channel_id)
        await self.ctx.registry.mark_archived(run_id=self.ctx.job_name, trial_id=self.trial_id)

    def _account(self) -> None:
        if not self.followers:
            return
        prices = {slot.agent_id: self.manifest.prices[slot.entry.endpoint] for slot in self.slots}
        states = {agent_id: f.state for agent_id, f in self.followers.items()}
        accounting = trial_accounting(states, {a: prices[a] for a in states})
        self.recorder.result.update(
            tokens=accounting.tokens,
            cost_usd=accounting.cost_usd,
            accounting=accounting.accounting,
            cached_estimated=accounting.cached_estimated,
        )

    def _redact(self) -> None:
        keys = list(self.agent_keys.values())
        if self.user is not None:
            keys.append(self.user.keys)
        keys += [identity.keys for _, identity in self.directory]
        secrets = secret_strings(keys, self.ctx.api_keys.values())
        if self.oracle_registered:
            secrets += [oracle_token(self.trial_id, slot.agent_id) for slot in self.slots]
        self.recorder.result["secret_scan"] = redact_tree(self.paths.root, secrets)
