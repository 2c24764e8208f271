"""Evidence export and the verifier run of a trial (§7.2 steps 18-19)."""

from __future__ import annotations

import asyncio

from orchestra.evidence.export import (
    EvidenceContext,
    EvidenceExportError,
    export_evidence,
    record_export_failure,
)
from orchestra.trial import provision
from orchestra.trial.base import TrialBase
from orchestra.trial.errors import TrialError, uncancel
from orchestra.verify.reward import VerifierFailure

EVIDENCE_SECONDS = 60.0


class TrialGrading(TrialBase):
    async def _grade(self) -> None:
        try:
            self.recorder.enter("evidence")
            await self._export_evidence()
            self.recorder.enter("verify")
            await self._verify()
        except asyncio.CancelledError:
            self.cancelled = True
            uncancel()
        except Exception as error:
            self._record_failure(error)

    async def _export_evidence(self) -> None:
        assert self.user is not None and self.channel_id is not None
        context = EvidenceContext(
            run_id=self.ctx.job_name,
            trial_id=self.trial_id,
            channel_id=self.channel_id,
            task_name=self.task.short_name,
            task_event_id=self.task_event_id,
            completion_message_id=self.buzz["completion_message_id"],
            identities={
                self.user.name: {"role": "user", "pubkey": self.user.pubkey},
                **{
                    slot.agent_id: {
                        "role": slot.kind,
                        "pubkey": self.agent_keys[slot.agent_id].pubkey,
                    }
                    for slot in self.slots
                },
            },
            directory=[
                {
                    "identity_id": entry.key,
                    "name": entry.name,
                    "role": entry.role,
                    "pubkey": identity.pubkey,
                    "about": entry.about or "",
                }
                for entry, identity in self.directory
            ],
            scripted_events=self.scripted,
            observe_channel_names=self.task.fixture.observe_channel_names,
            agent_pubkeys=[keys.pubkey for keys in self.agent_keys.values()],
            arrival=self.observer.arrival if self.observer is not None else {},
        )
        try:
            async with asyncio.timeout(EVIDENCE_SECONDS):
                await export_evidence(
                    context,
                    user_reader=self._user_client(),
                    orchestrator_reader=self._agent_client(self.orchestrator_id),
                    trial=self.paths,
                    run=provision.relay_operation,
                    log=self.recorder.log,
                )
                await self.environment.install_evidence()
        except Exception as error:  # every failure of §8.3-§8.5 is an export failure (§8.6)
            if not isinstance(error, EvidenceExportError):
                record_export_failure(error, self.paths)
            await self.environment.remove_evidence()
            if self.task.fixture.requires_evidence:
                raise TrialError(
                    "EvidenceExportError", str(error) or f"export exceeded {EVIDENCE_SECONDS:g} s"
                ) from error
            self.recorder.log(f"evidence export failed (not required): {error}")
            return
        self.buzz["evidence_exported"] = True

    async def _verify(self) -> None:
        if not self.buzz["evidence_exported"] and self.task.fixture.requires_evidence:
            return
        _, verifier_seconds = self.timeouts
        try:
            run = await self.environment.run_verifier(self.task.paths.tests_dir, verifier_seconds)
        except VerifierFailure as failure:
            self.recorder.result["verifier"] = failure.verifier
            self.recorder.result["rewards"] = failure.rewards
            raise TrialError(failure.exception_type, str(failure)) from failure
        self.recorder.result["verifier"] = run.summary()
        self.recorder.result["rewards"] = run.rewards
        self.recorder.result["reward"] = run.rewards["reward"]
