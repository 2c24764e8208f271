"""Running a task's verifier (orchestrator.md §9.2, §9.3), chosen by the environment kind.

`InEnvironmentVerifier` runs `tests/test.sh` inside an environment through its primitives (the
docker env: the agents' container once every agent process is dead and it has no network);
`HostVerifier` runs the path-mapped script on the host (the local env).
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestra.files import empty_directory
from orchestra.paths import TrialPaths
from orchestra.trial.env.protocol import ExecResult, TrialEnvironment
from orchestra.verify.local import run_local_verifier
from orchestra.verify.outcome import VerifierRun, conclude_verifier_run

VERIFIER_LANG = "C.UTF-8"
VERIFIER_USER = "root"


class InEnvironmentVerifier:
    """§9.2 in `environment`; the outputs are read from their host copies."""

    def __init__(self, environment: TrialEnvironment, trial: TrialPaths) -> None:
        self.environment = environment
        self.trial = trial

    async def run(self, tests_dir: Path, timeout_seconds: float) -> VerifierRun:
        empty_directory(self.trial.verifier_dir)
        result = await self.execute(tests_dir, timeout_seconds)
        return conclude_verifier_run(
            self.trial.verifier_dir,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            timeout_seconds=timeout_seconds,
            network=self.environment.facts.verifier_network,
        )

    async def execute(self, tests_dir: Path, timeout_seconds: float) -> ExecResult:
        """Steps 1-4: offline, a fresh `/logs/verifier` and `/tests`, `test.sh` as root with
        `LANG=C.UTF-8`, output in `<trial>/verifier/test-stdout.txt`, outputs copied back."""
        environment, paths = self.environment, self.environment.facts.paths
        await environment.isolate()
        verifier_dir, artifacts = paths.logs_verifier, paths.logs_artifacts
        (
            await environment.exec(
                ["sh", "-c", f"rm -rf {verifier_dir} && mkdir -p {verifier_dir} {artifacts}"]
            )
        ).check("preparing /logs/verifier")
        await environment.put_tree(tests_dir, paths.tests)
        test_sh = paths.tests / "test.sh"
        (await environment.exec(["chmod", "+x", str(test_sh)])).check(f"chmod +x {test_sh}")
        os.makedirs(self.trial.verifier_dir, exist_ok=True)
        result = await environment.exec(
            [str(test_sh)],
            output=self.trial.test_stdout,
            timeout_seconds=timeout_seconds,
            workdir=paths.root,
            env={"LANG": VERIFIER_LANG},
            user=VERIFIER_USER,
        )
        await environment.get_tree(verifier_dir, self.trial.verifier_dir)
        await environment.get_tree(artifacts, self.trial.artifacts_dir)
        return result


class HostVerifier:
    """§9.3: the mapped `test.local.sh` as a host process over the trial's directories."""

    def __init__(self, trial: TrialPaths, home: str | None) -> None:
        self.trial = trial
        self.home = home

    async def run(self, tests_dir: Path, timeout_seconds: float) -> VerifierRun:
        return await run_local_verifier(self.trial, self.home, tests_dir, timeout_seconds)
