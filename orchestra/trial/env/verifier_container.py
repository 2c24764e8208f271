"""The docker env's verifier container (orchestrator.md §9.2).

A container of its own for each trial, from the task's image (not the agent layer, so not one
file the agents' container held), created without network and without capabilities, with
`/tests/test.sh` as its entrypoint. The verifier's inputs are copied in as one archive before it
starts, so nothing has ever run in it when they land; `/logs/verifier` is the only thing copied
back out.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from orchestra.paths import CONTAINER_TEST_SH, LOGS_VERIFIER
from orchestra.trial.env.commands import run_command_to_end
from orchestra.trial.env.container import (
    CONTAINER_NAME_PREFIX,
    LABEL_JOB,
    LABEL_TRIAL,
    checked,
    remove_container,
    run_docker,
)
from orchestra.trial.env.protocol import ExecResult

LABEL_ROLE = "buzz-orchestra.role"
VERIFIER_ROLE = "verifier"
VERIFIER_LANG = "C.UTF-8"
VERIFIER_USER = "root"
#: A killed verifier's `docker start --attach` client ends with its container; this only bounds
#: a stuck client.
CLIENT_END_SECONDS = 10.0


def verifier_container_name(trial_id: str) -> str:
    return f"{CONTAINER_NAME_PREFIX}{trial_id[:8]}-{VERIFIER_ROLE}"


class VerifierContainer:
    """Handle on one trial's verifier container, by name; `id` once created."""

    def __init__(self, name: str, image: str) -> None:
        self.name = name
        self.image = image
        self.id = ""

    @classmethod
    async def create(
        cls, image: str, *, job_name: str, trial_id: str, cpus: float, memory_mb: int
    ) -> VerifierContainer:
        """`docker create`: no network, no capabilities, no privilege gain, root, `-w /`,
        `LANG=C.UTF-8`, the image's own `PATH`, `/tests/test.sh` as the entrypoint."""
        container = cls(verifier_container_name(trial_id), image)
        result = await run_docker(
            "create",
            "--name",
            container.name,
            "--label",
            f"{LABEL_JOB}={job_name}",
            "--label",
            f"{LABEL_TRIAL}={trial_id}",
            "--label",
            f"{LABEL_ROLE}={VERIFIER_ROLE}",
            "--network",
            "none",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--cpus",
            f"{cpus:g}",
            "--memory",
            f"{memory_mb}m",
            "--user",
            VERIFIER_USER,
            "--workdir",
            "/",
            "--env",
            f"LANG={VERIFIER_LANG}",
            "--entrypoint",
            str(CONTAINER_TEST_SH),
            image,
        )
        container.id = checked(result, f"docker create {image}").stdout.strip()
        return container

    async def put_archive(self, archive: bytes) -> None:
        """Extract a tar at `/` (ownership and modes as the archive says)."""
        checked(
            await run_docker("cp", "-", f"{self.name}:/", stdin=archive),
            f"docker cp - {self.name}:/",
        )

    async def run(self, output: Path, timeout_seconds: float) -> ExecResult:
        """Start it attached, output merged into `output`; killed on the deadline."""
        return await run_command_to_end(
            ["docker", "start", "--attach", self.name],
            output=output,
            timeout_seconds=timeout_seconds,
            abort=self._abort,
        )

    async def _abort(self, client: asyncio.subprocess.Process) -> None:
        await run_docker("kill", self.name)
        try:
            async with asyncio.timeout(CLIENT_END_SECONDS):
                await client.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                client.kill()
            await client.wait()

    async def copy_outputs(self, destination: Path) -> None:
        """`/logs/verifier/.` into the host directory `destination` (works once stopped)."""
        checked(
            await run_docker("cp", f"{self.name}:{LOGS_VERIFIER}/.", str(destination)),
            f"docker cp {self.name}:{LOGS_VERIFIER}/. {destination}",
        )

    async def remove(self) -> None:
        await remove_container(self.name)
