"""File-system helpers shared by the orchestrator folders."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


def empty_directory(path: Path) -> None:
    """Make `path` an existing, empty directory (symlinks inside are removed, not followed)."""
    if path.exists():
        for child in path.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    path.mkdir(parents=True, exist_ok=True)


def make_parents(directory: Path) -> None:
    """Missing directories up to `directory` are created 0755 whatever the umask, as `mkdir -p`
    makes them in a container."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir(mode=0o755)
        os.chmod(path, 0o755)


def remove_path(path: Path) -> None:
    """Remove a file, symlink or directory tree; a missing one is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def read_regular_file(path: Path, limit: int) -> bytes | None:
    """The bytes of `path` when it is a regular file (not a symlink) of at most `limit` bytes,
    else None."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        content = handle.read(limit + 1)
    return content if len(content) <= limit else None
