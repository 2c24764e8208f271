"""The local wheelhouse every image installs this package from (orchestrator.md §5.9).

`<state-dir>/wheelhouse/<target>/` holds this package's wheel, built from the working tree, and
binary wheels of all its runtime dependencies for one target interpreter. Images are built
from it with no registry access; the host fills it with `pip download` when something is
missing, and only then needs the package registry.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestra.errors import OrchestraError
from orchestra.paths import PROJECT_ROOT, StatePaths

PROJECT_DISTRIBUTION = "buzz-orchestra"
_PROJECT_WHEEL_GLOB = "buzz_orchestra-*.whl"
#: What goes into this package's wheel; copied out of the working tree so that leftovers of
#: earlier builds (`build/`, `*.egg-info`) never leak into it.
_PROJECT_SOURCES = ("pyproject.toml", "README.md", "orchestra", "docker-compose.yml", "testbed")
_IGNORED_SOURCES = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
#: Fixed zip timestamps make the wheel (and so the wheelhouse digest and every image tag)
#: depend on the code only, not on when it was built. 1980-01-01 is the zip format's minimum.
_REPRODUCIBLE_EPOCH = "315532800"
_OLDEST_MANYLINUX_MINOR = 5
_PIP_TIMEOUT_SECONDS = 600

#: Run by the image's `python3 -c` to describe the interpreter; must work on old Pythons too.
INTERPRETER_PROBE = """\
import glob, importlib.util, json, platform, sys
libc, libc_version = platform.libc_ver()
if not libc and glob.glob("/lib/ld-musl-*"):
    libc, libc_version = "musl", "1.2"
print(json.dumps({
    "version": list(sys.version_info[:2]),
    "machine": platform.machine(),
    "libc": libc or "unknown",
    "libc_version": libc_version or "",
    "venv": all(importlib.util.find_spec(m) is not None for m in ("venv", "ensurepip")),
}))
"""


class WheelhouseError(OrchestraError):
    """The wheelhouse cannot be completed; the message names the package or the step."""

    exit_code = 2


@dataclass(frozen=True)
class Interpreter:
    """What an image's `python3` reports about itself."""

    major: int
    minor: int
    machine: str
    libc: str
    libc_version: str
    has_venv: bool

    @classmethod
    def from_probe(cls, output: str) -> Interpreter:
        """Parse the JSON line printed by `INTERPRETER_PROBE`."""
        try:
            data = json.loads(output.strip().splitlines()[-1])
            major, minor = (int(part) for part in data["version"])
            return cls(
                major=major,
                minor=minor,
                machine=str(data["machine"]),
                libc=str(data["libc"]),
                libc_version=str(data["libc_version"]),
                has_venv=bool(data["venv"]),
            )
        except (IndexError, KeyError, TypeError, ValueError):
            raise WheelhouseError(
                f"unexpected interpreter probe output: {output[:200]!r}"
            ) from None

    @property
    def version(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def target(self) -> str:
        """e.g. `cp311-x86_64-glibc`: the wheelhouse directory name."""
        return f"cp{self.major}{self.minor}-{self.machine}-{self.libc}"

    def pip_platforms(self) -> list[str]:
        """The platform tags this interpreter accepts, newest first (PEP 600 / PEP 656)."""
        numbers = [int(n) for n in re.findall(r"\d+", self.libc_version)[:2]]
        if self.libc == "glibc" and len(numbers) == 2 and numbers[0] == 2:
            tags = [
                f"manylinux_2_{minor}_{self.machine}"
                for minor in range(numbers[1], _OLDEST_MANYLINUX_MINOR - 1, -1)
            ]
            legacy = (("manylinux2014", 17), ("manylinux2010", 12), ("manylinux1", 5))
            tags += [f"{name}_{self.machine}" for name, minor in legacy if numbers[1] >= minor]
            return tags
        if self.libc == "musl" and len(numbers) == 2 and numbers[0] == 1:
            return [f"musllinux_1_{minor}_{self.machine}" for minor in range(numbers[1], -1, -1)]
        raise WheelhouseError(
            f"unsupported C library {self.libc} {self.libc_version} for {self.target}: "
            "binary wheels exist only for glibc (manylinux) and musl (musllinux) images"
        )


@dataclass(frozen=True)
class Wheelhouse:
    directory: Path
    digest: str

    @property
    def short_digest(self) -> str:
        return self.digest[:12]


def wheelhouse_digest(directory: Path) -> str:
    """SHA-256 over the sorted lines `<file name> <sha256 of the file>`."""
    lines = sorted(
        f"{path.name} {hashlib.sha256(path.read_bytes()).hexdigest()}\n"
        for path in directory.iterdir()
        if path.is_file() and path.suffix == ".whl"
    )
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


@contextlib.contextmanager
def _exclusive(lock_file: Path) -> Iterator[None]:
    """Serialise wheelhouse updates across processes sharing the state dir."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_pip(
    args: list[str], *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    try:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=_PIP_TIMEOUT_SECONDS,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise WheelhouseError(
            f"pip {args[0]} did not finish within {_PIP_TIMEOUT_SECONDS} s"
        ) from None


def _can_build_in_place() -> bool:
    """The orchestrator's environment has the build backend, so no registry is needed."""
    return all(importlib.util.find_spec(name) is not None for name in ("setuptools", "wheel"))


def build_project_wheel(destination: Path, source_root: Path = PROJECT_ROOT) -> Path:
    """`pip wheel --no-deps` of a clean copy of the working tree; returns the wheel's path."""
    with tempfile.TemporaryDirectory(prefix="buzz-wheel-") as scratch:
        source = Path(scratch) / "src"
        source.mkdir()
        for name in _PROJECT_SOURCES:
            item = source_root / name
            if item.is_dir():
                shutil.copytree(item, source / name, ignore=_IGNORED_SOURCES)
            else:
                shutil.copy2(item, source / name)
        built = Path(scratch) / "wheel"
        isolation = ["--no-build-isolation"] if _can_build_in_place() else []
        env = {**os.environ, "SOURCE_DATE_EPOCH": _REPRODUCIBLE_EPOCH}
        result = _run_pip(
            ["wheel", "--no-deps", *isolation, "--wheel-dir", str(built), str(source)], env=env
        )
        wheels = sorted(built.glob(_PROJECT_WHEEL_GLOB))
        if result.returncode != 0 or len(wheels) != 1:
            raise WheelhouseError(
                f"building the {PROJECT_DISTRIBUTION} wheel failed:\n{_tail(result)}"
            )
        destination.mkdir(parents=True, exist_ok=True)
        target = destination / wheels[0].name
        shutil.copyfile(wheels[0], target)
        return target


def _tail(result: subprocess.CompletedProcess[str], lines: int = 15) -> str:
    return "\n".join((result.stderr or result.stdout or "").strip().splitlines()[-lines:])


def _download_args(interpreter: Interpreter, directory: Path, requirement: Path) -> list[str]:
    args = [
        "download",
        "--only-binary=:all:",
        "--python-version",
        interpreter.version,
        "--implementation",
        "cp",
        "--abi",
        f"cp{interpreter.major}{interpreter.minor}",
        "--dest",
        str(directory),
        "--find-links",
        str(directory),
    ]
    for platform_tag in interpreter.pip_platforms():
        args += ["--platform", platform_tag]
    return [*args, str(requirement)]


def _missing_package(result: subprocess.CompletedProcess[str]) -> str | None:
    match = re.search(r"No matching distribution found for (\S+)", result.stderr or "")
    return match.group(1) if match else None


def ensure_wheelhouse(state: StatePaths, interpreter: Interpreter) -> Wheelhouse:
    """Put the current working tree's wheel and every dependency wheel into the target's
    wheelhouse, reusing what is there; the registry is asked only for what is missing."""
    directory = state.wheelhouse(interpreter.target)
    with _exclusive(state.wheelhouse_root / f".{interpreter.target}.lock"):
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="buzz-wheel-out-") as scratch:
            fresh = build_project_wheel(Path(scratch))
            for stale in directory.glob(_PROJECT_WHEEL_GLOB):
                stale.unlink()
            project_wheel = Path(shutil.copyfile(fresh, directory / fresh.name))
        args = _download_args(interpreter, directory, project_wheel)
        offline = _run_pip([*args, "--no-index"])
        if offline.returncode != 0:
            online = _run_pip(args)
            if online.returncode != 0:
                missing = _missing_package(online) or _missing_package(offline)
                if missing is not None:
                    raise WheelhouseError(
                        f"wheelhouse {directory}: no {interpreter.target} wheel for {missing} "
                        "(not in the wheelhouse and the package registry did not provide one)"
                    )
                raise WheelhouseError(
                    f"wheelhouse {directory}: pip download failed:\n{_tail(online)}"
                )
        return Wheelhouse(directory, wheelhouse_digest(directory))
