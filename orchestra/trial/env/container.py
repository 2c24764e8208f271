"""One trial's container through the `docker` CLI (orchestrator.md §5.8, §7.2 steps 3/16/21, §7.9).

One container per trial, from the task's agent-layer image, idling on `sleep infinity`. Every
transfer is `docker cp` and every command `docker exec`; nothing is bind-mounted. Labels tie
containers to their job and trial, so `orchestra cleanup` can reap leftovers.
"""

from __future__ import annotations

import asyncio
import io
import ipaddress
import json
import os
import re
import shlex
import socket
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from orchestra.paths import (
    CONTAINER_ENV_DIR,
    CONTAINER_PROMPTS,
    CONTAINER_RUNTIME_LOGS,
    CONTAINER_WORKSPACE,
    LOGS_ARTIFACTS,
    container_env_file,
)
from orchestra.processes import CommandResult, run_command, tied
from orchestra.trial.env.commands import run_command_to_end
from orchestra.trial.env.protocol import LOOPBACK, EnvCommandError, ExecResult

LABEL_JOB = "buzz-orchestra.job"
LABEL_TRIAL = "buzz-orchestra.trial"
HOST_GATEWAY = "host.docker.internal:host-gateway"
CONTAINER_NAME_PREFIX = "bo-"
STOP_GRACE_SECONDS = 5.0
_STOP_POLL_SECONDS = 0.2
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class DockerEnvError(EnvCommandError):
    """A docker command for the trial container failed; the message names the command."""


def container_name(trial_id: str) -> str:
    return f"{CONTAINER_NAME_PREFIX}{trial_id[:8]}"


def env_file_text(env: Mapping[str, str]) -> str:
    """`KEY='value'` lines for `set -a; . file` (§7.9); values shell-quoted."""
    for key in env:
        if _ENV_NAME.fullmatch(key) is None:
            raise DockerEnvError(f"environment variable name {key!r} cannot be exported by sh")
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in env.items())


async def run_docker(
    *args: str, timeout_seconds: float = 120.0, stdin: bytes | None = None
) -> CommandResult:
    return await run_command(["docker", *args], timeout_seconds=timeout_seconds, stdin=stdin)


def checked(result: CommandResult, what: str) -> CommandResult:
    """`result`, or `DockerEnvError` naming `what` when the command failed."""
    if result.returncode != 0:
        raise DockerEnvError(f"{what} failed: {result.tail(5) or f'exit {result.returncode}'}")
    return result


def _is_directory(path: Path) -> bool:
    return path.is_dir()


class TrialContainer:
    """Handle on one trial's container, by name."""

    def __init__(self, name: str, container_id: str = "") -> None:
        self.name = name
        self.id = container_id

    @classmethod
    async def start(
        cls, image: str, *, job_name: str, trial_id: str, cpus: float, memory_mb: int
    ) -> TrialContainer:
        """`docker run --detach … --entrypoint sleep <image> infinity` (§5.8)."""
        name = container_name(trial_id)
        result = await run_docker(
            "run",
            "--detach",
            "--name",
            name,
            "--label",
            f"{LABEL_JOB}={job_name}",
            "--label",
            f"{LABEL_TRIAL}={trial_id}",
            "--cpus",
            f"{cpus:g}",
            "--memory",
            f"{memory_mb}m",
            "--add-host",
            HOST_GATEWAY,
            "--entrypoint",
            "sleep",
            image,
            "infinity",
        )
        if result.returncode != 0:
            # a container created but not started would leak; drop it (by its trial label, never
            # by name: the name could belong to another trial whose id shares the prefix)
            await _remove_labelled(f"{LABEL_TRIAL}={trial_id}")
            checked(result, f"docker run {image}")
        return cls(name, result.stdout.strip())

    # --- commands ------------------------------------------------------------------------

    def exec_argv(
        self,
        command: Sequence[str],
        *,
        workdir: PurePosixPath | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> list[str]:
        """`docker exec` for `command`. `env` lands on a command line: never pass secrets."""
        argv = ["docker", "exec"]
        if workdir is not None:
            argv += ["-w", str(workdir)]
        if user is not None:
            argv += ["-u", user]
        for key, value in (env or {}).items():
            argv += ["-e", f"{key}={value}"]
        return [*argv, self.name, *command]

    async def exec(self, command: Sequence[str], *, timeout_seconds: float = 60.0) -> CommandResult:
        """A short command, output captured; raises when it exits non-zero."""
        return checked(
            await run_command(self.exec_argv(command), timeout_seconds=timeout_seconds),
            f"docker exec {self.name} {shlex.join(command)[:80]}",
        )

    async def sh(self, script: str, *, timeout_seconds: float = 60.0) -> CommandResult:
        return await self.exec(["sh", "-c", script], timeout_seconds=timeout_seconds)

    async def start_session(
        self, command: Sequence[str], *, stdout: Path, stderr: Path
    ) -> asyncio.subprocess.Process:
        """A long-lived `docker exec` with no stdin, its output streamed to host files as it
        is produced. The process exits with the command's exit status (§7.7 watches it)."""
        with stdout.open("ab") as out, stderr.open("ab") as err:
            return await asyncio.create_subprocess_exec(
                *tied(self.exec_argv(command)),  # the host session dies with the orchestrator
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )

    async def run(
        self,
        command: Sequence[str],
        *,
        output: Path | None,
        timeout_seconds: float,
        workdir: PurePosixPath | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run under a deadline, stdout and stderr merged into `output` (else captured). On
        timeout the host session is killed and so is everything left in the container except
        PID 1: the engine offers no handle on one exec'd command's processes."""
        return await run_command_to_end(
            self.exec_argv(command, workdir=workdir, env=env, user=user),
            output=output,
            timeout_seconds=timeout_seconds,
            abort=self._abort,
        )

    async def _abort(self, process: asyncio.subprocess.Process) -> None:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await run_docker("exec", self.name, "sh", "-c", "kill -KILL -1")

    # --- agents (§7.9) -----------------------------------------------------------------------

    async def working_dir(self) -> PurePosixPath:
        """The image's WORKDIR (`/` when it sets none)."""
        result = checked(
            await run_docker("inspect", "--format", "{{.Config.WorkingDir}}", self.name),
            f"docker inspect {self.name}",
        )
        return PurePosixPath(result.stdout.strip() or "/")

    async def prepare_layout(self, *extra: PurePosixPath) -> None:
        """Step 3: the agents' directories (and `extra` ones) exist and `/logs/artifacts` is
        empty."""
        directories = (
            CONTAINER_WORKSPACE,
            CONTAINER_PROMPTS,
            CONTAINER_RUNTIME_LOGS,
            CONTAINER_ENV_DIR,
            LOGS_ARTIFACTS,
            *extra,
        )
        await self.sh(
            f"rm -rf {LOGS_ARTIFACTS} && mkdir -p {' '.join(str(d) for d in directories)}"
            f" && chmod 0700 {CONTAINER_ENV_DIR}"
        )

    async def start_agent(
        self,
        agent_id: str,
        env: Mapping[str, str],
        *,
        programs_dir: PurePosixPath,
        workdir: PurePosixPath,
        stdout: Path,
        stderr: Path,
    ) -> asyncio.subprocess.Process:
        """Copy the agent's env file in (secrets never on a command line) and exec `buzz-acp`;
        the file is removed by the session itself before `buzz-acp` starts."""
        env_path = container_env_file(agent_id)
        descriptor, host_file = tempfile.mkstemp(prefix="buzz-agent-env-")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:  # mkstemp: mode 0600
                handle.write(env_file_text(env))
            await self.copy_in(Path(host_file), env_path)
        finally:
            os.unlink(host_file)
        script = (
            f"set -a; . {env_path}; set +a; rm -f {env_path}; "
            f"cd {shlex.quote(str(workdir))}; exec {programs_dir / 'buzz-acp'}"
        )
        return await self.start_session(["sh", "-c", script], stdout=stdout, stderr=stderr)

    async def stop_processes(self, grace_seconds: float = STOP_GRACE_SECONDS) -> None:
        """Step 16: TERM every process but PID 1, wait up to `grace_seconds`, then KILL."""
        await run_docker("exec", self.name, "sh", "-c", "kill -TERM -1")
        deadline = time.monotonic() + grace_seconds
        # the engine has no "all exec'd processes ended" event to wait on: poll `docker top`
        while time.monotonic() < deadline and await self._process_count() > 1:  # noqa: ASYNC110
            await asyncio.sleep(_STOP_POLL_SECONDS)
        await run_docker("exec", self.name, "sh", "-c", "kill -KILL -1")

    async def _process_count(self) -> int:
        result = await run_docker("top", self.name, "-o", "pid")
        return max(len(result.stdout.strip().splitlines()) - 1, 0) if result.returncode == 0 else 0

    # --- files -----------------------------------------------------------------------------

    async def copy_in(self, source: Path, destination: PurePosixPath) -> None:
        """A host file to `destination`, or a host directory's contents into `destination`."""
        is_directory = _is_directory(source)
        await self.exec(["mkdir", "-p", str(destination if is_directory else destination.parent)])
        await self._docker_cp(f"{source}/." if is_directory else str(source), destination)

    async def replace_directory(self, source: Path, destination: PurePosixPath) -> None:
        """`destination` becomes a copy of the host directory `source` (emptied first)."""
        await self.sh(f"rm -rf {destination} && mkdir -p {destination}")
        await self._docker_cp(f"{source}/.", destination)

    async def _docker_cp(self, origin: str, destination: PurePosixPath) -> None:
        checked(
            await run_docker("cp", origin, f"{self.name}:{destination}"),
            f"docker cp {origin} {self.name}:{destination}",
        )

    async def copy_out(self, source: PurePosixPath, destination: Path) -> None:
        """The contents of container directory `source` into host directory `destination`."""
        os.makedirs(destination, exist_ok=True)
        checked(
            await run_docker("cp", f"{self.name}:{source}/.", str(destination)),
            f"docker cp {self.name}:{source}/. {destination}",
        )

    async def read_file(self, path: PurePosixPath, limit: int) -> bytes | None:
        """The bytes of regular file `path` (`docker cp <ctr>:<path> -`, read by the engine,
        not by a program of the container); None when it is missing, not a regular file or
        larger than `limit` bytes."""
        client = await asyncio.create_subprocess_exec(
            "docker", "cp", f"{self.name}:{path}", "-",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        assert client.stdout is not None
        archive = await client.stdout.read(limit + _TAR_OVERHEAD + 1)
        if len(archive) > limit + _TAR_OVERHEAD:
            client.kill()
        if await client.wait() != 0:
            return None
        return _only_regular_file(archive, limit)

    async def changes(self) -> list[str]:
        """The paths `docker diff` lists (added, changed or deleted since the image)."""
        result = checked(await run_docker("diff", self.name), f"docker diff {self.name}")
        return [line[2:] for line in result.stdout.splitlines() if len(line) > 2]

    # --- network ---------------------------------------------------------------------------

    async def networks(self) -> list[str]:
        result = checked(
            await run_docker(
                "inspect", "--format", "{{json .NetworkSettings.Networks}}", self.name
            ),
            f"docker inspect {self.name}",
        )
        attached = json.loads(result.stdout or "null") or {}
        return sorted(attached)

    async def disconnect_networks(self) -> list[str]:
        """Detach from every network `docker inspect` lists; returns their names."""
        names = await self.networks()
        for network in names:
            checked(
                await run_docker("network", "disconnect", "--force", network, self.name),
                f"docker network disconnect {network} {self.name}",
            )
        return names

    async def remove(self) -> None:
        await remove_container(self.name)


async def remove_container(name: str) -> None:
    """`docker rm -f`; a container that is already gone is fine."""
    result = await run_docker("rm", "--force", name)
    if result.returncode != 0 and "No such container" not in result.stderr:
        raise DockerEnvError(f"docker rm -f {name} failed: {result.tail(5)}")


#: A one-file tar (`docker cp … -`): header blocks (PAX included), padding and the end blocks.
_TAR_OVERHEAD = 16 * 1024


def _only_regular_file(archive: bytes, limit: int) -> bytes | None:
    try:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            member = tar.next()
            if member is None or not member.isfile() or member.size > limit:
                return None
            extracted = tar.extractfile(member)
            return extracted.read() if extracted is not None else None
    except tarfile.TarError:
        return None


async def host_gateway_bind_address() -> str:
    """Where a host server must listen for containers to reach it as `host.docker.internal`
    (§4.5): the default bridge's gateway when it is an interface of this host (Linux engines),
    else loopback (Docker Desktop forwards `host.docker.internal` to the host's loopback)."""
    result = await run_docker("network", "inspect", "bridge", "--format", "{{json .IPAM.Config}}")
    configs = json.loads(result.stdout or "null") if result.returncode == 0 else None
    for config in configs or []:
        # engines that leave Gateway empty use the subnet's first address (docker0)
        subnet = config.get("Subnet")
        address = config.get("Gateway") or (
            str(ipaddress.ip_network(subnet, strict=False)[1]) if subnet else None
        )
        if address and _is_local_address(address):
            return address
    return LOOPBACK


def _is_local_address(address: str) -> bool:
    try:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
    except OSError:
        return False
    return True


async def cleanup_containers(job_name: str | None = None) -> list[str]:
    """`orchestra cleanup`: remove containers labelled with a job (all jobs, or `job_name`)."""
    return await _remove_labelled(LABEL_JOB if job_name is None else f"{LABEL_JOB}={job_name}")


async def _remove_labelled(label: str) -> list[str]:
    listed = checked(
        await run_docker("ps", "--all", "--filter", f"label={label}", "--format", "{{.Names}}"),
        "docker ps",
    )
    names = sorted(line.strip() for line in listed.stdout.splitlines() if line.strip())
    if names:
        checked(await run_docker("rm", "--force", *names), "docker rm -f")
    return names
