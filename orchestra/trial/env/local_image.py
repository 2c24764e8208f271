"""A Harbor task's image without Docker: the local env's reading of `environment/Dockerfile`
(docs/decisions.md D46).

The local env has no image to build, so it honours the instructions that only place files:
`FROM` (the host's system directories stand in for the base image), `WORKDIR`, and `COPY`/`ADD`
of files from the build context; `LABEL`, `EXPOSE`, `CMD` and `ENTRYPOINT` do not shape the
file system and are skipped. Anything else (`RUN`, `ENV`, `USER`, a second `FROM`, variables,
globs, `--from`, URLs) cannot be honoured without Docker: the trial fails naming the line, and
the docker env runs the task. The task's files go under `<trial>/sandbox/<path>` and each
top-level directory they use (e.g. `/app`) is shown at its container path in the sandbox.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from orchestra.config.errors import display_path
from orchestra.errors import OrchestraError

SKIPPED = frozenset({"LABEL", "EXPOSE", "CMD", "ENTRYPOINT"})
#: Top-level directories the sandbox itself provides; a task cannot put files there.
RESERVED = frozenset({"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin"})
RESERVED |= {"sys", "tmp", "usr", "run"}
_UNSUPPORTED_CHARACTERS = frozenset("$*?[")


class LocalImageError(OrchestraError):
    """The Dockerfile needs Docker; `str()` names the file and line. A run's preflight refuses
    it (exit 2); a trial that meets it ends in `EnvironmentStartError`."""

    exit_code = 2


_Refuse = Callable[[str], LocalImageError]


@dataclass(frozen=True)
class LocalImage:
    """What the Dockerfile places: the working directory and (host source, container path)
    copies, in order."""

    workdir: PurePosixPath
    copies: tuple[tuple[Path, PurePosixPath], ...]

    @property
    def top_directories(self) -> tuple[PurePosixPath, ...]:
        """The top-level directories the task's paths live in, e.g. `/app`, sorted (`/`
        itself for a path that is the root)."""
        paths = [self.workdir, *(target for _, target in self.copies)]
        return tuple(sorted({PurePosixPath("/", *path.parts[1:2]) for path in paths}))

    def materialize(self, root: Path) -> None:
        """Create the directories under `root` and copy the files in, as `docker build`
        would (a directory source copies its contents)."""
        for top in self.top_directories:
            host(root, top).mkdir(parents=True, exist_ok=True)
        host(root, self.workdir).mkdir(parents=True, exist_ok=True)
        for source, target in self.copies:
            destination = host(root, target)
            if source.is_dir():
                shutil.copytree(source, destination, dirs_exist_ok=True)
            else:
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination)


def host(root: Path, path: PurePosixPath) -> Path:
    """Where the container path `path` lives under `root`."""
    return root / str(path).lstrip("/")


def read_local_image(environment_dir: Path) -> LocalImage:
    """Read `environment/Dockerfile`; raises `LocalImageError` for what needs Docker."""
    dockerfile = environment_dir / "Dockerfile"
    shown = display_path(dockerfile)
    workdir = PurePosixPath("/")
    copies: list[tuple[Path, PurePosixPath]] = []
    seen_from = False
    for number, line in _instructions(dockerfile.read_text(encoding="utf-8")):
        refuse = _refusal(shown, number)
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword in SKIPPED:
            continue
        if keyword == "FROM":
            if seen_from:
                raise refuse("a second FROM (multi-stage build)")
            seen_from = True
        elif keyword == "WORKDIR":
            workdir = _container_path(rest, workdir, refuse)
        elif keyword in ("COPY", "ADD"):
            copies += _copies(keyword, rest, environment_dir, workdir, refuse)
        else:
            raise refuse(f"{keyword} is not supported")
    image = LocalImage(workdir, tuple(copies))
    for top in image.top_directories:
        if top == PurePosixPath("/") or top.name in RESERVED:
            raise LocalImageError(
                f"{shown}: the task uses {top}, which the local sandbox provides itself "
                "(use --env docker)"
            )
    return image


def _refusal(shown: str, number: int) -> _Refuse:
    def refuse(why: str) -> LocalImageError:
        return LocalImageError(
            f"{shown}: line {number}: {why}; the local env cannot build it (use --env docker)"
        )

    return refuse


def _instructions(text: str) -> list[tuple[int, str]]:
    """(first line number, instruction) with continuations joined and comments dropped."""
    instructions: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        instructions.append((start, pending + stripped))
        pending = ""
    if pending:
        instructions.append((start, pending))
    return instructions


def _container_path(value: str, workdir: PurePosixPath, refuse: _Refuse) -> PurePosixPath:
    if not value or _UNSUPPORTED_CHARACTERS & set(value):
        raise refuse(f"path {value!r} is not supported")
    path = PurePosixPath(value) if value.startswith("/") else workdir / value
    if ".." in path.parts:
        raise refuse(f"path {value!r} is not supported")
    return path


def _copies(
    keyword: str, rest: str, context: Path, workdir: PurePosixPath, refuse: _Refuse
) -> list[tuple[Path, PurePosixPath]]:
    words = json.loads(rest) if rest.startswith("[") else rest.split()
    flags = [word for word in words if word.startswith("--")]
    words = [word for word in words if not word.startswith("--")]
    if any(not flag.startswith(("--chown", "--chmod")) for flag in flags):
        raise refuse(f"{keyword} {' '.join(flags)} is not supported")
    if len(words) < 2:
        raise refuse(f"{keyword} needs a source and a destination")
    *sources, destination = words
    into_directory = destination.endswith("/") or len(sources) > 1
    target = _container_path(destination, workdir, refuse)
    copies = []
    for source in sources:
        if "://" in source or _UNSUPPORTED_CHARACTERS & set(source):
            raise refuse(f"{keyword} source {source!r} is not supported")
        host_source = (context / source).resolve()
        if not host_source.is_relative_to(context.resolve()) or not host_source.exists():
            raise refuse(f"{keyword} source {source!r} is not a file of the build context")
        if host_source.is_file() and into_directory:
            copies.append((host_source, target / host_source.name))
        else:
            copies.append((host_source, target))
    return copies
