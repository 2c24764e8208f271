"""The local env's reading of a Harbor task's Dockerfile (orchestra.trial.env.local_image):
the instructions that only place files are honoured, anything that needs Docker is refused
naming the file and line."""

from pathlib import Path, PurePosixPath

import pytest
from harbor_support import HARBOR_TASKS

from orchestra.trial.env.local_image import LocalImageError, read_local_image


def context(tmp_path: Path, dockerfile: str, **files: str) -> Path:
    environment = tmp_path / "environment"
    environment.mkdir()
    (environment / "Dockerfile").write_text(dockerfile)
    for name, content in files.items():
        path = environment / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return environment


def test_workdir_and_copies_land_under_the_sandbox_root(tmp_path: Path) -> None:
    environment = context(
        tmp_path,
        "FROM python:3.12-slim-bookworm AS base\n# a comment\nWORKDIR /app\n"
        "COPY --chown=1000 a.txt \\\n  ./\nCOPY src /app/src\nADD b.txt c.txt /data/\n"
        'COPY ["a.txt", "renamed.txt"]\nWORKDIR sub\nCMD ["python3"]\n',
        **{"a.txt": "a", "b.txt": "b", "c.txt": "c", "src__main.py": "print()"},
    )
    image = read_local_image(environment)
    assert image.workdir == PurePosixPath("/app/sub")
    assert [(source.name, str(target)) for source, target in image.copies] == [
        ("a.txt", "/app/a.txt"),
        ("src", "/app/src"),
        ("b.txt", "/data/b.txt"),
        ("c.txt", "/data/c.txt"),
        ("a.txt", "/app/renamed.txt"),
    ]
    assert image.top_directories == (PurePosixPath("/app"), PurePosixPath("/data"))
    root = tmp_path / "sandbox"
    image.materialize(root)
    assert (root / "app" / "src" / "main.py").read_text() == "print()"
    assert (root / "data" / "c.txt").read_text() == "c"
    assert (root / "app" / "sub").is_dir()


def test_the_fixture_tasks_need_no_docker() -> None:
    image = read_local_image(HARBOR_TASKS / "fix-python-bug" / "environment")
    assert image.workdir == PurePosixPath("/app")
    assert [str(target) for _, target in image.copies] == ["/app/calc.py", "/app/numbers.txt"]


@pytest.mark.parametrize(
    ("dockerfile", "problem"),
    [
        ("FROM x\nWORKDIR /app\nRUN pip install numpy\n", "line 3: RUN is not supported"),
        ("FROM x\nENV A=1\n", "line 2: ENV is not supported"),
        ("FROM x AS a\nFROM y\n", "line 2: a second FROM (multi-stage build)"),
        ("FROM x\nCOPY --from=a /x /y\n", "line 2: COPY --from=a is not supported"),
        ("FROM x\nCOPY missing.txt /app/\n", "line 2: COPY source 'missing.txt' is not a file"),
        ("FROM x\nCOPY ../task.toml /app/\n", "line 2: COPY source '../task.toml' is not a file"),
        ("FROM x\nWORKDIR $HOME\n", "line 2: path '$HOME' is not supported"),
        ("FROM x\nADD https://example.org/x /app/\n", "line 2: ADD source 'https://example"),
    ],
    ids=["run", "env", "multi-stage", "copy-from", "missing", "outside", "variable", "url"],
)
def test_what_needs_docker_is_refused_naming_the_line(
    tmp_path: Path, dockerfile: str, problem: str
) -> None:
    environment = context(tmp_path, dockerfile)
    with pytest.raises(LocalImageError) as caught:
        read_local_image(environment)
    message = str(caught.value)
    assert message.startswith(f"{environment / 'Dockerfile'}: {problem}"), message
    assert message.endswith("; the local env cannot build it (use --env docker)")
    assert "\n" not in message


@pytest.mark.parametrize("workdir", ["/", "/usr/src/app", "/tmp/work"])
def test_paths_the_sandbox_provides_itself_are_refused(tmp_path: Path, workdir: str) -> None:
    environment = context(tmp_path, f"FROM x\nWORKDIR {workdir}\n")
    with pytest.raises(LocalImageError, match="which the local sandbox provides itself"):
        read_local_image(environment)
