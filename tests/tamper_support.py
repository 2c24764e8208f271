"""The tamper suite (tests/fixtures/tamper-solutions): oracle solutions that behave like a
task's negative or reference solution on the relay and then try to reach the verdict some other
way. Each must leave exactly the verdict the relay evidence earns (its `# caught-by:` and
`# expect:` lines), and the tampering must show in trial.log where it is detectable
(`# visible:` for both envs, `# visible-local:` / `# visible-docker:` for one: regexes).

Headers: `# task: <dir>` (one task per solution, so that one job runs the suite: the evidence
names a task by its directory), `# honest: negative|reference` (copied beside the script as
`solution/honest.sh`), then the expectation and visibility lines.
"""

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from solution_headers import Expectation, read_expectation

from orchestra.paths import PROJECT_ROOT

TAMPER_SOLUTIONS = PROJECT_ROOT / "tests" / "fixtures" / "tamper-solutions"
TAMPER_LIB = TAMPER_SOLUTIONS / "tamper-lib.sh"
NEGATIVE_SOLUTIONS = PROJECT_ROOT / "tests" / "fixtures" / "negative-solutions"
DATASET = PROJECT_ROOT / "tasks" / "buzz-native"
#: The only host PATH directory a tamper solution may write (replace-interpreters.sh).
TAMPER_PATH_DIR_NAME = "tamper-path-bin"
#: A task copy holding this file is one a tamper solution may rewrite (edit-tests.sh).
TARGET_MARKER = ".tamper-target"
BWRAP = shutil.which("bwrap")
Env = Literal["local", "docker"]

_HEADER = re.compile(
    r"^# (?P<key>task|honest|visible|visible-local|visible-docker): (?P<value>.+)$"
)


@dataclass(frozen=True)
class TamperSolution:
    name: str
    script: Path
    task: str
    honest: str
    expectation: Expectation
    visible: dict[str, list[str]]  # header key -> regexes

    def visible_in(self, env: Env) -> list[str]:
        return [*self.visible.get("visible", []), *self.visible.get(f"visible-{env}", [])]

    def honest_script(self) -> Path:
        if self.honest == "reference":
            return DATASET / self.task / "solution" / "solve.sh"
        return NEGATIVE_SOLUTIONS / f"{self.task}.sh"


def read_tamper_solution(script: Path) -> TamperSolution:
    fields: dict[str, list[str]] = {}
    for line in script.read_text(encoding="utf-8").splitlines():
        if match := _HEADER.match(line):
            fields.setdefault(match["key"], []).append(match["value"])
    (task,) = fields.pop("task")
    (honest,) = fields.pop("honest")
    assert honest in ("negative", "reference"), f"{script}: honest must be negative or reference"
    assert (DATASET / task / "task.toml").is_file(), f"{script}: no task {task}"
    return TamperSolution(script.stem, script, task, honest, read_expectation(script), fields)


def tamper_solutions() -> list[TamperSolution]:
    return [
        read_tamper_solution(path)
        for path in sorted(TAMPER_SOLUTIONS.glob("*.sh"))
        if path != TAMPER_LIB
    ]


def tamper_dataset(root: Path) -> Path:
    """Copies of the tampered tasks under `root`, each with its tamper solution as
    `solution/solve.sh` beside `tamper-lib.sh` and `honest.sh`, marked as rewritable."""
    for solution in tamper_solutions():
        task = root / solution.task
        shutil.copytree(DATASET / solution.task, task, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(solution.honest_script(), task / "solution" / "honest.sh")
        shutil.copyfile(TAMPER_LIB, task / "solution" / "tamper-lib.sh")
        shutil.copyfile(solution.script, task / "solution" / "solve.sh")
        (task / TARGET_MARKER).write_text("this copy may be rewritten by a tamper solution\n")
    return root


def read_only_host(writable: Sequence[Path]) -> list[str]:
    """A command prefix under which the host's file system is read-only but for `writable`
    (bubblewrap; same user, same network and processes). The tamper solutions aim at whatever a
    verifier could read, `/usr/bin/python3` included, and the local env does not confine its
    agents yet: on the host they run only under this, so that no bug of theirs (or of the
    harness) can write outside the test's scratch directory."""
    assert BWRAP is not None, "bubblewrap (Debian's bubblewrap package) runs the local tamper suite"
    binds = [arg for path in writable for arg in ("--bind", str(path), str(path))]
    return [
        BWRAP, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
        *binds, "--die-with-parent", "--",
    ]  # fmt: skip


def tamper_problems(
    solution: TamperSolution, result: dict[str, Any], trial_log: str, env: Env
) -> list[str]:
    """What is wrong with one tampered trial: a verdict other than the evidence's, or tampering
    that should show in trial.log and does not."""
    problems = []
    if result.get("status") != "scored":
        problems.append(f"status {result.get('status')}: {result.get('exception_info')}")
    wrong = solution.expectation.problems(result.get("rewards"))
    if wrong:
        problems.append(f"rewards differ from what the evidence earns: {wrong}")
    if result.get("reward") != 0.0:
        problems.append(f"reward {result.get('reward')}")
    problems += [
        f"trial.log does not show the tampering: no line matches {pattern!r}"
        for pattern in solution.visible_in(env)
        if not re.search(pattern, trial_log)
    ]
    return problems
