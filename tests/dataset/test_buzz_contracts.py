"""The buzz-contracts dataset and the task kit (`orchestra task new|check`, docs/decisions.md D78).

Every buzz-contracts task passes the kit's checks that need no stack: task.toml and fixture,
the verifier's common contract and every case of its `verifier-cases.toml`, metric coverage and
a negative solution in tests/fixtures/negative-solutions/buzz-contracts. The end-to-end test
replays a scaffolded task and one whose oracle is its negative solution through the real stack.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shared_snippets import TRACE_BLOCK, blocks_of, canonical_blocks, template_blocks
from solution_headers import read_expectation

from orchestra.config.task import load_task
from orchestra.paths import PROJECT_ROOT, TASK_TEMPLATE_DIR, TaskPaths
from orchestra.taskkit.check import CheckOptions, TaskCheck, check_tasks, negative_solution
from orchestra.taskkit.scaffold import ScaffoldError, scaffold
from orchestra.taskkit.stack import StackOptions, check_run, replay

CONTRACTS = PROJECT_ROOT / "tasks" / "buzz-contracts"
NEGATIVES = PROJECT_ROOT / "tests" / "fixtures" / "negative-solutions" / "buzz-contracts"
CONTRACT_TASKS = sorted(p.name for p in CONTRACTS.iterdir() if (p / "task.toml").is_file())
STATIC = CheckOptions(StackOptions(work_dir=Path()), replay=False)


def static_problems(task_dir: Path) -> list[str]:
    [result] = check_tasks([task_dir], STATIC)
    return result.problems


@pytest.mark.parametrize("task", CONTRACT_TASKS)
def test_contract_task_is_sound_on_paper(task: str) -> None:
    assert static_problems(CONTRACTS / task) == []


@pytest.mark.parametrize("task", CONTRACT_TASKS)
def test_contract_task_is_named_for_its_directory_and_dataset(task: str) -> None:
    loaded = load_task(CONTRACTS / task)
    assert loaded.name == f"buzz-contracts/{task}"
    assert loaded.layer in ("regression", "workflow")
    negative, _ = negative_solution(CONTRACTS / task, None)
    assert negative == NEGATIVES / f"{task}.sh"
    text = negative.read_text(encoding="utf-8")
    assert "# caught-by: " in text and "# expect: reward = 0.0" in text


def test_every_negative_solution_belongs_to_a_task() -> None:
    assert sorted(p.stem for p in NEGATIVES.glob("*.sh")) == CONTRACT_TASKS


@pytest.mark.parametrize("task", CONTRACT_TASKS)
def test_contract_verifier_carries_the_canonical_helpers(task: str) -> None:
    text = (CONTRACTS / task / "tests" / "verify.py").read_text(encoding="utf-8")
    assert canonical_blocks()["evidence helpers"] in text


#: the contract verifiers that judge the agent's events (the secret check scans everything)
WHOLE_TRACE_TASKS = [task for task in CONTRACT_TASKS if task != "secret-canary-refusal"]


def test_contract_verifiers_share_one_whole_trace_block() -> None:
    """docs/decisions.md D101: the nine behaviour verifiers read the trace by the same rules."""
    blocks = {
        task: blocks_of((CONTRACTS / task / "tests" / "verify.py").read_text("utf-8")).get(
            "whole trace"
        )
        for task in WHOLE_TRACE_TASKS
    }
    assert None not in blocks.values(), blocks
    assert len(set(blocks.values())) == 1, "whole trace blocks differ between verifiers"


def test_scaffold_template_carries_the_canonical_blocks() -> None:
    canonical = canonical_blocks()
    verifier = (TASK_TEMPLATE_DIR / "tests" / "verify.py").read_text(encoding="utf-8")
    blocks = blocks_of(verifier)
    trace_helpers = blocks.pop(TRACE_BLOCK)
    assert blocks == {name: canonical[name] for name in ("evidence helpers", "entry points")}
    assert "def agent_events(" in trace_helpers and "def leaks(" in trace_helpers


@pytest.mark.parametrize("task", CONTRACT_TASKS)
def test_contract_verifier_trace_helpers_are_the_templates(task: str) -> None:
    """Wherever a contract verifier carries the trace helpers, they are the template's (run
    `.venv/bin/python tests/dataset/shared_snippets.py` to copy them)."""
    text = (CONTRACTS / task / "tests" / "verify.py").read_text(encoding="utf-8")
    carried = blocks_of(text).get(TRACE_BLOCK)
    assert carried in (None, template_blocks()[TRACE_BLOCK])
    if task == "secret-canary-refusal":
        assert carried is not None


def test_scaffolded_task_is_sound_on_paper(tmp_path: Path) -> None:
    task_dir = tmp_path / "suite" / "ready-task"
    scaffold(task_dir, "workflow")
    assert static_problems(task_dir) == []
    assert load_task(task_dir).name == "suite/ready-task"
    assert load_task(task_dir).layer == "workflow"


def test_scaffold_refuses_a_directory_with_files(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ScaffoldError, match="not an empty directory"):
        scaffold(tmp_path, "regression")
    with pytest.raises(ScaffoldError, match="--layer"):
        scaffold(tmp_path / "new", "harbor")


def test_a_case_that_expects_the_wrong_metric_is_named(tmp_path: Path) -> None:
    task_dir = tmp_path / "suite" / "ready-task"
    scaffold(task_dir, "regression")
    cases = task_dir / "verifier-cases.toml"
    text = cases.read_text(encoding="utf-8")
    cases.write_text(
        text.replace('content = "Yes, all set."', 'content = "ready, all set."'), encoding="utf-8"
    )
    problems = static_problems(task_dir)
    assert any('case "another word": answer_correct = 1 (expected 0)' in p for p in problems)


def test_a_task_without_a_negative_solution_is_refused(tmp_path: Path) -> None:
    task_dir = tmp_path / "suite" / "ready-task"
    scaffold(task_dir, "regression")
    (task_dir / "solution" / "negative.sh").unlink()
    assert any("no negative solution" in p for p in static_problems(task_dir))


@pytest.mark.e2e
@pytest.mark.slow
def test_check_replays_through_the_real_stack(stack_scratch: Path, free_port: int) -> None:
    """A scaffolded task is sound; the same task with its negative solution as its oracle is
    not, and the line says the oracle scored 0 and which metric caught it."""
    sound, swapped = stack_scratch / "suite" / "ready-task", stack_scratch / "suite" / "swapped"
    scaffold(sound, "regression")
    scaffold(swapped, "regression")
    shutil.copyfile(swapped / "solution" / "negative.sh", TaskPaths(swapped).solve_sh)
    stack = StackOptions(
        Path(), check_run({"relay_port": free_port, "state_dir": stack_scratch / "state"})
    )
    results: list[TaskCheck] = check_tasks([sound, swapped], CheckOptions(stack))
    assert results[0].problems == []
    assert results[1].problems == [
        f"{results[1].shown}: oracle solution scores reward 0 through the real stack, "
        "expected 1 (reply_in_thread = 0)"
    ]


@pytest.mark.e2e
@pytest.mark.slow
def test_contract_negatives_are_caught_by_the_metric_their_header_names(
    stack_scratch: Path, free_port: int
) -> None:
    """Every buzz-contracts negative solution through the real stack: reward 0.0, its
    `# caught-by:` metric 0.0 and every `# expect:` line holding (the oracle side is
    `orchestra task check`'s, run by the test above on a scaffolded task)."""
    stack = StackOptions(
        stack_scratch / "negatives",
        check_run({"relay_port": free_port, "state_dir": stack_scratch / "state"}),
    )
    scripts = {CONTRACTS / task: NEGATIVES / f"{task}.sh" for task in CONTRACT_TASKS}
    run = replay("negative", scripts, stack)
    for task in CONTRACT_TASKS:
        found = run.replays.get(task)
        assert found is not None and found.result is not None, run.output
        result = found.result
        assert result.status == "scored", (task, result.exception_info)
        # every one ends on the solo rules, also wait-for-bot-reply, whose scripted reply tags
        # nobody and so counts as delivered once posted (never a timeout)
        assert result.stop_reason == "turn_end", task
        expectation = read_expectation(NEGATIVES / f"{task}.sh")
        assert result.rewards is not None and result.rewards[expectation.caught_by] == 0.0, task
        assert expectation.problems(result.rewards) == {}, (task, result.rewards)


def test_the_guides_worked_example_is_sound_on_paper(tmp_path: Path) -> None:
    """docs/writing-a-task.md, section 2, step by step: a scaffold completed by hand."""
    task_dir = tmp_path / "my-suite" / "weeks-in-thread"
    scaffold(task_dir, "regression")
    (task_dir / "instruction.md").write_text("How many weeks are in 84 days?\n", encoding="utf-8")
    (task_dir / "buzz-fixture.toml").write_text(
        'schema_version = 1\nrequires_evidence = true\nuser_display_name = "Ada Lena Moss"\n',
        encoding="utf-8",
    )
    edits = {
        "tests/verify.py": [
            ('EXPECTED_WORD = "ready"', 'EXPECTED_WEEKS = "12"'),
            (
                'words = re.findall(r"[a-z]+", content(final).casefold())',
                'numbers = re.findall(r"\\d+", content(final))',
            ),
            (
                '"answer_correct": len(answers) == 1 and EXPECTED_WORD in words,',
                '"answer_correct": len(answers) == 1 and EXPECTED_WEEKS in numbers,',
            ),
        ],
        "solution/solve.sh": [("'@%s ready\\n'", "'@%s 84 days are 12 weeks.\\n'")],
        "solution/negative.sh": [("'@%s ready\\n'", "'@%s 84 days are 12 weeks.\\n'")],
        "verifier-cases.toml": [
            ('content = "ready"', 'content = "84 days are 12 weeks."'),
            ('content = "@user Ready."', 'content = "@Ada Lena Moss 12"'),
            ('content = "**READY**"', 'content = "**12 weeks**"'),
            ('content = "Yes, all set."', 'content = "About 3 months."'),
        ],
    }
    for relative, replacements in edits.items():
        path = task_dir / relative
        text = path.read_text(encoding="utf-8")
        for old, new in replacements:
            assert old in text, (relative, old)
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    assert static_problems(task_dir) == []
