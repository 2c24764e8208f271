"""The blocks shared by the ten verifiers stay byte-identical (see shared_snippets.py)."""

from __future__ import annotations

import pytest
from positives import TASKS
from shared_snippets import (
    BEGIN,
    BLOCK_TASKS,
    CANONICAL_TASK,
    END,
    blocks_of,
    canonical_blocks,
    tasks_carrying,
    verifier_paths,
)


def test_every_task_has_a_verifier():
    assert sorted(path.parents[1].name for path in verifier_paths()) == sorted(TASKS)


def test_canonical_verifier_holds_every_block():
    assert set(canonical_blocks()) == set(BLOCK_TASKS)


@pytest.mark.parametrize("name", BLOCK_TASKS)
def test_block_is_byte_identical_wherever_it_is_required(name):
    canonical = canonical_blocks()[name]
    assert canonical.startswith(BEGIN.format(name=name)) and canonical.endswith(END)
    for task in tasks_carrying(name):
        path = next(p for p in verifier_paths() if p.parents[1].name == task)
        text = path.read_text(encoding="utf-8")
        assert text.count(BEGIN.format(name=name)) == 1, path
        assert blocks_of(text).get(name) == canonical, (
            f"{path}: shared block {name!r} differs from {CANONICAL_TASK}; "
            "run .venv/bin/python tests/dataset/shared_snippets.py"
        )


def test_no_verifier_carries_a_block_it_does_not_need():
    for path in verifier_paths():
        text = path.read_text(encoding="utf-8")
        for name in blocks_of(text):
            assert path.parents[1].name in tasks_carrying(name), (path, name)
        assert text.count("# --- begin shared:") == len(blocks_of(text)), path
