"""File-system helpers shared by the orchestrator folders."""

from __future__ import annotations

import shutil
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
