"""`orchestra task new PATH --layer L`: a task directory that `orchestra task check` passes as
written, for the author to turn into their task (docs/writing-a-task.md)."""

from __future__ import annotations

from pathlib import Path

from orchestra.config.task import BUZZ_LAYERS
from orchestra.errors import OrchestraError
from orchestra.paths import TASK_TEMPLATE_DIR

EXECUTABLE = 0o755
#: Shared by both solution scripts (each file of the template holds its script's body only).
SOLUTION_PREAMBLE = Path("solution") / "preamble.sh"
SOLUTION_HEADERS = {
    Path("solution") / "solve.sh": "Reference solution for __NAME__; replayed by the built-in "
    "oracle model.",
    Path("solution") / "negative.sh": "Negative solution for __NAME__: a realistic mistake the "
    "verifier must score 0.0.",
}


class ScaffoldError(OrchestraError):
    """The directory cannot be scaffolded (exit 1)."""

    exit_code = 1


def template_files(template_dir: Path = TASK_TEMPLATE_DIR) -> dict[Path, str]:
    """Relative path -> text of the template's files, as shipped (placeholders unfilled)."""
    return {
        path.relative_to(template_dir): path.read_text(encoding="utf-8")
        for path in sorted(template_dir.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def scaffold_files(task_dir: Path, layer: str) -> dict[Path, str]:
    """Relative path -> content of every file `task new` writes: the template's files with
    `__DIR__`, `__NAME__`, `__LAYER__` and `__PATH__` filled in, the solution scripts behind
    their shared preamble."""
    name = f"{task_dir.absolute().parent.name}/{task_dir.name}"
    files = template_files()
    preamble = files.pop(SOLUTION_PREAMBLE)
    for script, header in SOLUTION_HEADERS.items():
        files[script] = preamble.replace("__HEADER__", header) + files[script]
    return {
        relative: text.replace("__DIR__", task_dir.name)
        .replace("__NAME__", name)
        .replace("__LAYER__", layer)
        .replace("__PATH__", task_dir.as_posix())
        for relative, text in files.items()
    }


def scaffold(task_dir: Path, layer: str) -> list[Path]:
    """Writes the files; refuses a PATH that exists and is not an empty directory."""
    if layer not in BUZZ_LAYERS:
        raise ScaffoldError(f"--layer must be one of {', '.join(BUZZ_LAYERS)} (got {layer!r})")
    if task_dir.exists() and (not task_dir.is_dir() or any(task_dir.iterdir())):
        raise ScaffoldError(f"{task_dir}: exists and is not an empty directory")
    written = []
    for relative, text in scaffold_files(task_dir, layer).items():
        path = task_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if path.suffix in (".sh", ".py"):
            path.chmod(EXECUTABLE)
        written.append(path)
    return written
