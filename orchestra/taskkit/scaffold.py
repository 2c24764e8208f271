"""`orchestra task new PATH --layer L`: a task directory that `orchestra task check` passes as
written, for the author to turn into their task (docs/writing-a-task.md)."""

from __future__ import annotations

from pathlib import Path

from orchestra.config.task import BUZZ_LAYERS
from orchestra.errors import OrchestraError
from orchestra.taskkit import template

EXECUTABLE = 0o755


class ScaffoldError(OrchestraError):
    """The directory cannot be scaffolded (exit 1)."""

    exit_code = 1


def scaffold_files(task_dir: Path, layer: str) -> dict[str, str]:
    """Relative path -> content of every file `task new` writes."""
    name = f"{task_dir.absolute().parent.name}/{task_dir.name}"

    def fill(text: str) -> str:
        return (
            text.replace("__DIR__", task_dir.name)
            .replace("__NAME__", name)
            .replace("__LAYER__", layer)
            .replace("__PATH__", task_dir.as_posix())
        )

    verify = "".join(
        (
            template.VERIFY_HEAD,
            template.SHARED_HELPERS,
            template.VERIFY_BODY,
            template.SHARED_ENTRY_POINTS,
        )
    )
    solve = template.SOLVE_PREAMBLE.replace(
        "__HEADER__", "Reference solution for __NAME__; replayed by the built-in oracle model."
    )
    negative = template.SOLVE_PREAMBLE.replace(
        "__HEADER__",
        "Negative solution for __NAME__: a realistic mistake the verifier must score 0.0.",
    )
    return {
        "task.toml": fill(template.TASK_TOML),
        "buzz-fixture.toml": template.FIXTURE_TOML,
        "instruction.md": template.INSTRUCTION_MD,
        "README.md": fill(template.README_MD),
        "environment/Dockerfile": template.DOCKERFILE,
        "tests/test.sh": template.TEST_SH,
        "tests/verify.py": fill(verify),
        "solution/solve.sh": fill(solve + template.SOLVE_BODY),
        "solution/negative.sh": fill(negative + template.NEGATIVE_BODY),
        "verifier-cases.toml": fill(template.CASES_TOML),
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
