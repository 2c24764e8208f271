"""The verifier of a Harbor task (docs/decisions.md D46): the grade is the state the agents left, so
`tests/test.sh` runs where they worked, once every agent process is dead.

What the harness still controls: no agent process is left (the trial stopped them, §7.2 step
16), there is no network, `/tests` is the orchestrator's own copy (`Task.tests`, as read when
the job started) put in place only now, `/logs/verifier` is fresh and empty, and the evidence
the orchestrator exported is at `/logs/artifacts`. The reward is read as §9.4 says.

`InEnvironmentVerifier` does it through the environment's primitives (the docker env: the
agents' container, disconnected from every network); `SandboxStateVerifier` runs the script in
a bubblewrap sandbox over the same files the agents' sandboxes saw (the local env), with a
network namespace of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath

from orchestra.paths import (
    CONTAINER_EVIDENCE,
    CONTAINER_TEST_SH,
    CONTAINER_TESTS,
    LOGS_ARTIFACTS,
    LOGS_VERIFIER,
    TrialPaths,
)
from orchestra.trial.env.protocol import TrialEnvironment
from orchestra.trial.env.sandbox import AgentFiles, Launcher, Mount, TreeLaunch
from orchestra.verify.inputs import VerifierInputs, clear_verifier_dirs
from orchestra.verify.outcome import NETWORK_NONE, VerifierRun, conclude_verifier_run

Log = Callable[[str], None]
#: Docker's default PATH: what a Harbor verifier finds in an image that sets none.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
VERIFIER_LANG = "C.UTF-8"


def _prepare_record(trial: TrialPaths, inputs: VerifierInputs, log: Log) -> None:
    clear_verifier_dirs(trial.verifier_dir, trial.verifier_inputs_dir, log=log)
    inputs.write_tree(trial.verifier_inputs_dir)  # the record of what it was given
    trial.verifier_input(LOGS_ARTIFACTS).mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class InEnvironmentVerifier:
    """The docker env: in the agents' container, as root, from the agents' working
    directory (Harbor runs it there), the task's `[verifier].env` set."""

    env: TrialEnvironment
    trial: TrialPaths
    variables: Mapping[str, str]

    async def run(self, inputs: VerifierInputs, timeout_seconds: float, log: Log) -> VerifierRun:
        env, trial = self.env, self.trial
        _prepare_record(trial, inputs, log)
        for note in await env.isolate():  # already cut off at the stop: this confirms it
            log(note)
        fresh = f"rm -rf {CONTAINER_TESTS} {LOGS_VERIFIER} {LOGS_ARTIFACTS}"
        fresh += f" && mkdir -p {LOGS_VERIFIER} {LOGS_ARTIFACTS}"
        (await env.exec(["sh", "-c", fresh], user="root")).check("clearing /tests and /logs")
        await env.put_tree(trial.verifier_input(CONTAINER_TESTS), CONTAINER_TESTS)
        if inputs.evidence is not None:
            await env.put_file(trial.verifier_input(CONTAINER_EVIDENCE), CONTAINER_EVIDENCE)
        chmod = ["chmod", "+x", str(CONTAINER_TEST_SH)]
        (await env.exec(chmod, user="root")).check("chmod +x /tests/test.sh")
        log("verifier: tests/test.sh in the agents' container (no network, agents stopped)")
        result = await env.exec(
            [str(CONTAINER_TEST_SH)],
            output=trial.test_stdout,
            timeout_seconds=timeout_seconds,
            workdir=env.facts.paths.workspace,
            env={"LANG": VERIFIER_LANG, **self.variables},
            user="root",
        )
        await env.get_tree(LOGS_VERIFIER, trial.verifier_dir)
        return conclude_verifier_run(
            trial.verifier_dir,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            timeout_seconds=timeout_seconds,
            network=NETWORK_NONE,
        )


@dataclass(frozen=True)
class SandboxStateVerifier:
    """The local env: a bubblewrap sandbox over the trial's sandbox directory and the task's
    directories at their container paths (`mounts`, as the agents had them), plus `/tests`
    (read-only), `/logs/artifacts` (read-only) and `/logs/verifier`; `--unshare-net`."""

    launcher: Launcher
    trial: TrialPaths
    mounts: tuple[Mount, ...]
    workdir: PurePath
    variables: Mapping[str, str]

    async def run(self, inputs: VerifierInputs, timeout_seconds: float, log: Log) -> VerifierRun:
        trial = self.trial
        _prepare_record(trial, inputs, log)
        mounts = (
            *self.mounts,
            Mount(trial.verifier_input(CONTAINER_TESTS), CONTAINER_TESTS, writable=False),
            Mount(trial.verifier_input(LOGS_ARTIFACTS), LOGS_ARTIFACTS, writable=False),
            Mount(trial.verifier_dir, LOGS_VERIFIER),
        )
        files = AgentFiles(trial.sandbox, self.workdir, mounts=mounts, offline=True)
        variables = {"PATH": DEFAULT_PATH, "LANG": VERIFIER_LANG, "HOME": "/tmp", **self.variables}
        log("verifier: tests/test.sh in a sandbox over the agents' files (no network)")
        tree = await self.launcher.start(
            TreeLaunch(
                [str(CONTAINER_TEST_SH)], files, variables, trial.test_stdout, trial.test_stdout
            )
        )
        exit_code: int | None = None
        try:
            async with asyncio.timeout(timeout_seconds):
                exit_code = await tree.process.wait()
        except TimeoutError:
            await tree.stop(grace=0.0, hurry=None)
        return conclude_verifier_run(
            trial.verifier_dir,
            exit_code=exit_code,
            timed_out=exit_code is None,
            timeout_seconds=timeout_seconds,
            network=NETWORK_NONE,
        )
