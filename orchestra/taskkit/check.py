"""`orchestra task check`: whether a task is sound, as one line per thing that is missing.

A task is sound when its `task.toml` and fixture load, its verifier passes the common contract
(fail closed on missing, malformed and non-object evidence) and every case of
`verifier-cases.toml`, every metric is driven to 0.0 by some case and the reward to 1.0 by at
least three, its oracle solution scores 1.0 and its negative solution 0.0 through the real stack,
and the verifier gives the trial's verdict again, within its timeout, with no agent workspace.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestra.config.errors import ConfigError, display_path
from orchestra.config.task import Task, load_task
from orchestra.documents.enums import TrialStatus
from orchestra.paths import PROJECT_ROOT, TaskPaths, TrialPaths
from orchestra.taskkit.case_replay import replay_cases
from orchestra.taskkit.cases import CaseWorld, cases_path, load_cases
from orchestra.taskkit.stack import Replay, StackOptions, StackRun, replay
from orchestra.taskkit.verifier import Verdict, run_verifier

NEGATIVE_IN_TASK = Path("solution") / "negative.sh"
#: The repository's convention for datasets under `tasks/`: negative solutions live outside
#: the task, so agents and exports never carry them.
REPO_NEGATIVES = PROJECT_ROOT / "tests" / "fixtures" / "negative-solutions"
MIN_CORRECT_CASES = 3
MALFORMED_EVIDENCE = {
    "no evidence file": None,
    "evidence that is not JSON": b"{not json",
    "an evidence root that is not an object": b"[]",
}


@dataclass(frozen=True)
class CheckOptions:
    stack: StackOptions
    negatives_dir: Path | None = None
    #: with the real stack: the oracle and negative replays (skipped: static checks only)
    replay: bool = True
    #: with the real stack: every case of `verifier-cases.toml` the buzz CLI can play
    replay_cases: bool = False


@dataclass
class TaskCheck:
    dir: Path
    task: Task | None = None
    negative: Path | None = None
    problems: list[str] = field(default_factory=list)
    #: what the check did not do, and why (cases left out of `--replay-cases`)
    notes: list[str] = field(default_factory=list)

    @property
    def shown(self) -> str:
        return display_path(self.dir)


def negative_solution(task_dir: Path, negatives_dir: Path | None) -> tuple[Path | None, list[Path]]:
    """The task's negative solution and the places looked at, in order: `--negatives DIR`'s
    `<task dir name>.sh`, the task's `solution/negative.sh`, then, for a task of the
    repository's `tasks/<dataset>/`, `tests/fixtures/negative-solutions[/<dataset>]/<task>.sh`."""
    candidates = []
    if negatives_dir is not None:
        candidates.append(negatives_dir / f"{task_dir.name}.sh")
    candidates.append(task_dir / NEGATIVE_IN_TASK)
    resolved = task_dir.resolve()
    if resolved.parent.parent == (PROJECT_ROOT / "tasks").resolve():
        dataset = resolved.parent.name
        candidates.append(REPO_NEGATIVES / dataset / f"{task_dir.name}.sh")
        candidates.append(REPO_NEGATIVES / f"{task_dir.name}.sh")
    found = next((path for path in candidates if path.is_file()), None)
    return found, candidates


def check_tasks(task_dirs: Sequence[Path], options: CheckOptions) -> list[TaskCheck]:
    checks = [TaskCheck(task_dir) for task_dir in task_dirs]
    for check in checks:
        _static(check, options)
    ready = [check for check in checks if check.task is not None]
    if options.replay and ready:
        _replays(ready, options.stack)
    if options.replay_cases and ready:
        replayed = replay_cases([check.task for check in ready if check.task], options.stack)
        for check in ready:
            check.problems += replayed[check.dir].problems
            check.notes += replayed[check.dir].notes
    return checks


def _static(check: TaskCheck, options: CheckOptions) -> None:
    try:
        check.task = load_task(check.dir)
    except ConfigError as error:
        check.problems += [str(single) for single in error.errors]
        return
    if check.task.is_harbor:
        check.problems.append(f"{check.shown}: no buzz-fixture.toml (the kit checks Buzz tasks)")
        check.task = None
        return
    if not TaskPaths(check.dir).solve_sh.is_file():
        check.problems.append(f"{check.shown}: solution/solve.sh missing (the oracle solution)")
    check.negative, looked = negative_solution(check.dir, options.negatives_dir)
    if check.negative is None:
        shown = ", ".join(display_path(path) for path in looked)
        check.problems.append(f"{check.shown}: no negative solution (looked for {shown})")
    check.problems += verifier_problems(check.task)
    if check.problems:
        check.task = None  # a task that is not sound on paper is not worth a stack run


def verifier_problems(task: Task) -> list[str]:
    """The common contract, then every case of `verifier-cases.toml`, then metric coverage."""
    shown = display_path(task.dir)
    problems = []
    metrics: set[str] | None = None
    for what, evidence in MALFORMED_EVIDENCE.items():
        verdict = run_verifier(task, evidence)
        problems += _timing_problems(shown, what, verdict, task)
        if not verdict.rewards or any(value != 0.0 for value in verdict.rewards.values()):
            problems.append(
                f"{shown}: verifier given {what}: every metric must be 0.0, got {verdict.rewards}"
            )
        elif verdict.error is None:
            problems.append(f"{shown}: verifier given {what}: details.json must carry an error")
        metrics = metrics or set(verdict.rewards)
    try:
        cases = load_cases(task.dir)
    except ConfigError as error:
        return [*problems, *(str(single) for single in error.errors)]
    world = CaseWorld(task)
    zeroed: set[str] = set()
    correct = 0
    for case in cases:
        evidence = json.dumps(world.evidence(case)).encode()
        verdict = run_verifier(task, evidence)
        where = f'{display_path(cases_path(task.dir))}: case "{case.name}"'
        problems += _timing_problems(shown, f'case "{case.name}"', verdict, task)
        if verdict.failure is not None:
            problems.append(f"{where}: {verdict.failure}")
            continue
        metrics = metrics or set(verdict.rewards)
        if set(verdict.rewards) != metrics:
            problems.append(
                f"{where}: metrics {sorted(verdict.rewards)}, other cases {sorted(metrics)}"
            )
        unknown = sorted(set(case.expect) - set(verdict.rewards))
        if unknown:
            problems.append(
                f"{where}: expects metrics the verifier does not write: {', '.join(unknown)}"
            )
        wrong = {
            name: verdict.rewards[name]
            for name, value in case.expect.items()
            if name in verdict.rewards and verdict.rewards[name] != value
        }
        if wrong:
            got = ", ".join(
                f"{name} = {value:g} (expected {case.expect[name]:g})"
                for name, value in sorted(wrong.items())
            )
            problems.append(f"{where}: {got}")
        zeroed |= {name for name, value in case.expect.items() if value == 0.0}
        correct += case.expect.get("reward") == 1.0
    for metric in sorted((metrics or set()) - zeroed - {"reward"}):
        problems.append(
            f"{shown}: metric {metric}: no case expects it 0.0 (add a realistic mistake it catches)"
        )
    if correct < MIN_CORRECT_CASES:
        problems.append(
            f"{shown}: {correct} case(s) expect reward 1.0; at least {MIN_CORRECT_CASES} different correct behaviours are needed"
        )
    return problems


def _timing_problems(shown: str, what: str, verdict: Verdict, task: Task) -> list[str]:
    if verdict.timed_out:
        return [
            f"{shown}: verifier on {what} exceeded its timeout of {task.toml.verifier.timeout_sec:g} s"
        ]
    return []


def _replays(checks: list[TaskCheck], stack: StackOptions) -> None:
    with tempfile.TemporaryDirectory(prefix="orchestra-task-check-") as scratch:
        options = dataclasses.replace(stack, work_dir=Path(scratch))
        oracle = replay("oracle", {c.dir: TaskPaths(c.dir).solve_sh for c in checks}, options)
        negative = replay(
            "negative", {c.dir: c.negative for c in checks if c.negative is not None}, options
        )
        for check in checks:
            assert check.task is not None
            _judge(check, "oracle solution", oracle, 1.0)
            _judge(
                check, f"negative solution {display_path(check.negative or Path())}", negative, 0.0
            )
            _workspace_absent(check, oracle.replays.get(check.dir.name))


def _judge(check: TaskCheck, what: str, run: StackRun, wanted: float) -> None:
    found = run.replays.get(check.dir.name)
    result = None if found is None else found.result
    if result is None:
        check.problems.append(f"{check.shown}: {what}: no trial ran ({run.why_no_trial()})")
    elif result.status is not TrialStatus.SCORED:
        info = result.exception_info
        reason = f"{info.exception_type}: {info.exception_message}" if info else str(result.status)
        check.problems.append(
            f"{check.shown}: {what}: the trial ended in {result.status}: {reason}"
        )
    elif result.reward != wanted:
        failing = sorted(
            name
            for name, value in (result.rewards or {}).items()
            if value != wanted and name != "reward"
        )
        detail = f" ({', '.join(failing)} = {1.0 - wanted:g})" if failing else ""
        check.problems.append(
            f"{check.shown}: {what} scores reward {result.reward:g} through the real stack, expected {wanted:g}{detail}"
        )


def _workspace_absent(check: TaskCheck, found: Replay | None) -> None:
    """The oracle trial's evidence graded again where no agent ever ran: same rewards."""
    task = check.task
    if task is None or found is None or found.result.status is not TrialStatus.SCORED:
        return
    paths = TrialPaths(found.trial_dir)
    evidence = paths.artifacts_evidence_json
    files = [
        (file.path, paths.fixture_file_record(file.path).read_bytes(), file.mode_bits)
        for file in task.fixture.files
    ]
    verdict = run_verifier(
        task, evidence.read_bytes() if evidence.is_file() else None, fixture_files=files
    )
    check.problems += _timing_problems(check.shown, "the oracle trial's evidence", verdict, task)
    if verdict.rewards != found.result.rewards:
        check.problems.append(
            f"{check.shown}: without the agent's workspace the verifier gives {verdict.rewards}, "
            f"the trial gave {found.result.rewards}"
        )
