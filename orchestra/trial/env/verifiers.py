"""Running a task's verifier (orchestrator.md §9.2, §9.3), chosen by the environment kind.

Both run over the trial's `VerifierInputs` (the harness's copies, never what agents left) and
first empty `<trial>/verifier` and `<trial>/verifier-inputs`, logging whatever was found there;
`<trial>/verifier-inputs/` then holds exactly what the verifier was given. `ContainerVerifier`
runs `tests/test.sh` in a verifier container of its own (the docker env); `HostVerifier` runs
the path-mapped script on the host (the local env).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass

from orchestra.paths import TrialPaths
from orchestra.trial.env.container import remove_container
from orchestra.trial.env.verifier_container import VerifierContainer, verifier_container_name
from orchestra.verify.inputs import VerifierInputs, clear_verifier_dirs
from orchestra.verify.local import run_local_verifier
from orchestra.verify.outcome import NETWORK_NONE, VerifierRun, conclude_verifier_run

Log = Callable[[str], None]


@dataclass(frozen=True)
class ContainerVerifier:
    """§9.2: a fresh container of the task's image per trial, offline, inputs copied in before
    it starts, removed afterwards unless `keep` (`--keep-containers`)."""

    trial: TrialPaths
    _: KW_ONLY
    image: str
    job_name: str
    trial_id: str
    cpus: float
    memory_mb: int
    keep: bool

    async def run(self, inputs: VerifierInputs, timeout_seconds: float, log: Log) -> VerifierRun:
        trial = self.trial
        clear_verifier_dirs(trial.verifier_dir, trial.verifier_inputs_dir, log=log)
        inputs.write_tree(trial.verifier_inputs_dir)  # the record of what it was given
        try:
            container = await VerifierContainer.create(
                self.image,
                job_name=self.job_name,
                trial_id=self.trial_id,
                cpus=self.cpus,
                memory_mb=self.memory_mb,
            )
            log(
                f"verifier container {container.name} ({container.id[:12]}) from {self.image}: "
                "no network, no capabilities, inputs copied in before it started"
            )
            await container.put_archive(inputs.archive())
            result = await container.run(trial.test_stdout, timeout_seconds)
            await container.copy_outputs(trial.verifier_dir)
        finally:
            if not self.keep:
                # by name: a cancelled `docker create` may still have made it
                await remove_container(verifier_container_name(self.trial_id))
        return conclude_verifier_run(
            trial.verifier_dir,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            timeout_seconds=timeout_seconds,
            network=NETWORK_NONE,
        )


class HostVerifier:
    """§9.3: the mapped `test.local.sh` as a host process over `<trial>/verifier-inputs/`."""

    def __init__(self, trial: TrialPaths, home: str | None) -> None:
        self.trial = trial
        self.home = home

    async def run(self, inputs: VerifierInputs, timeout_seconds: float, log: Log) -> VerifierRun:
        return await run_local_verifier(self.trial, self.home, inputs, timeout_seconds, log)
