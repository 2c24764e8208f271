"""The server's private scratch directory: `bin/buzz` shim and shell output artifacts (§3.1)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from orchestra.errors import OrchestraError

# Variables that must never reach a shell command even when the parent passed them on.
_HIDDEN_FROM_SHELL = ("NOSTR_PRIVATE_KEY",)


class WorkspaceError(OrchestraError):
    """Startup problem that makes the server unusable (reported as one line, exit 1)."""


def find_buzz_cli(environ: dict[str, str]) -> Path:
    """`BUZZ_CLI_PATH`, else next to our own interpreter (same venv), else `PATH`."""
    configured = environ.get("BUZZ_CLI_PATH", "").strip()
    if configured:
        candidate = Path(configured)
        if candidate.is_dir():
            candidate = candidate / "buzz"
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            raise WorkspaceError(f"BUZZ_CLI_PATH: {configured!r} is not an executable file")
        return candidate.absolute()
    beside_python = Path(sys.executable).parent / "buzz"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return beside_python
    on_path = shutil.which("buzz", path=environ.get("PATH"))
    if on_path:
        return Path(on_path).absolute()
    raise WorkspaceError("cannot find the buzz executable (set BUZZ_CLI_PATH or put it on PATH)")


@dataclass
class Workspace:
    root: Path
    cwd: Path
    shell_env: dict[str, str]
    _artifact_count: int = 0

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    def next_artifact_path(self) -> Path:
        self._artifact_count += 1
        return self.artifacts / f"shell-{self._artifact_count:04d}.log"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def create_workspace(environ: dict[str, str]) -> Workspace:
    buzz = find_buzz_cli(environ)
    # mkdtemp honours TMPDIR and creates the directory with mode 0700.
    root = Path(tempfile.mkdtemp(prefix="buzz-dev-mcp-"))
    (root / "bin").mkdir()
    (root / "artifacts").mkdir()
    (root / "bin" / "buzz").symlink_to(buzz)
    shell_env = {k: v for k, v in environ.items() if k not in _HIDDEN_FROM_SHELL}
    inherited_path = environ.get("PATH", os.defpath)
    shell_env.update(
        PATH=f"{root / 'bin'}:{inherited_path}",
        PAGER="cat",
        GIT_PAGER="cat",
        GIT_TERMINAL_PROMPT="0",
    )
    return Workspace(root=root, cwd=Path.cwd(), shell_env=shell_env)
