"""The two checkouts a side-by-side suite run compares: this one, and a git worktree of an earlier
commit with its own virtual environment, kept in a cache directory and reused while the reference
resolves to the same commit."""

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATASET = Path("tasks") / "buzz-native"
NEGATIVE_SOLUTIONS = Path("tests") / "fixtures" / "negative-solutions"
INSTALLED_STAMP = ".bench-installed"


class CheckoutError(Exception):
    """A reference that does not resolve, or a worktree or venv that cannot be made."""


@dataclass(frozen=True)
class Checkout:
    label: str  # "baseline" or "current"
    root: Path
    commit: str  # full sha; "+dirty" when the current checkout has uncommitted changes
    venv: Path

    @property
    def orchestra(self) -> Path:
        return self.venv / "bin" / "orchestra"

    @property
    def dataset(self) -> Path:
        return self.root / DATASET

    @property
    def negative_solutions(self) -> Path:
        return self.root / NEGATIVE_SOLUTIONS

    def environment(self) -> dict[str, str]:
        """This process's environment with the checkout's venv first on PATH (the orchestrator
        finds its own programs beside its interpreter; this is for what agents run by name)."""
        env = {**os.environ, "PATH": f"{self.venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
        env.pop("VIRTUAL_ENV", None)
        return env

    def dataset_digest(self) -> str:
        """Identifies the task files (the suite each side runs comes from its own checkout)."""
        digest = hashlib.sha256()
        for path in sorted(self.dataset.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(self.dataset)).encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()[:12]


def git(*args: str, cwd: Path = PROJECT_ROOT) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CheckoutError(f"git {' '.join(args)}: {result.stderr.strip() or 'failed'}")
    return result.stdout.strip()


def current_checkout() -> Checkout:
    commit = git("rev-parse", "HEAD")
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += "+dirty"
    venv = Path(sys.prefix)
    if not (venv / "bin" / "orchestra").is_file():
        raise CheckoutError(f"{venv}: no orchestra script; run the bench with the checkout's .venv")
    return Checkout("current", PROJECT_ROOT, commit, venv)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "buzz-orchestra" / "bench-baseline"


def baseline_checkout(ref: str, log: Callable[[str], None]) -> Checkout:
    """A detached worktree of `ref` under the cache with its own venv (made once per commit)."""
    try:
        commit = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except CheckoutError:
        raise CheckoutError(f"{ref}: not a commit, tag or branch of this repository") from None

    root = cache_root() / commit
    venv = root / ".venv"
    if (root / INSTALLED_STAMP).is_file() and _worktree_head(root) == commit:
        return Checkout("baseline", root, commit, venv)
    log(f"preparing the baseline worktree of {ref} ({commit[:12]}) in {root}")
    if root.exists():
        shutil.rmtree(root)
    git("worktree", "prune")
    root.parent.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "--detach", str(root), commit)
    _run([sys.executable, "-m", "venv", str(venv)], "creating the baseline venv")
    # Editable, as `just setup` installs a checkout: the worktree's own code is what runs.
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "-e", str(root)], "installing the baseline into its venv")
    (root / INSTALLED_STAMP).write_text(commit + "\n")
    return Checkout("baseline", root, commit, venv)


def _worktree_head(root: Path) -> str | None:
    try:
        return git("rev-parse", "HEAD", cwd=root)
    except CheckoutError:
        return None


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise CheckoutError(f"{what} failed (exit {result.returncode}): {tail}")
