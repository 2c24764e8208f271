"""The blocks every buzz-native verify.py repeats verbatim, and a tool to re-sync them.

Verifiers must stay self-contained standard-library scripts (dataset.md §2.6), so common code
cannot be imported; instead it is copied between marker comments and kept byte-identical.
Edit a block in the canonical verifier, then run
`.venv/bin/python tests/dataset/shared_snippets.py` to copy it into the others;
`test_shared_snippets.py` fails while any copy differs. The task kit's trace helpers
(the task kit's verifier template, orchestra/taskkit/template/tests/verify.py) are copied the same way into every buzz-contracts
verifier that carries them (test_buzz_contracts.py).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

TASKS_ROOT = Path(__file__).resolve().parents[2] / "tasks" / "buzz-native"
CONTRACTS_ROOT = TASKS_ROOT.parent / "buzz-contracts"
TRACE_BLOCK = "trace helpers"
TEMPLATE_VERIFIER = (
    TASKS_ROOT.parents[1] / "orchestra" / "taskkit" / "template" / "tests" / "verify.py"
)
CANONICAL_TASK = "reply-to-thread"
BEGIN = "# --- begin shared: {name} (keep identical; tests/dataset/test_shared_snippets.py) ---\n"
END = "# --- end shared ---\n"
ALL_TASKS = frozenset(path.parents[1].name for path in TASKS_ROOT.glob("*/tests/verify.py"))
# Which verifiers carry each block: the evidence helpers everywhere; the §2.6 number parser
# only where the task uses it (memory-retrieval keeps upstream's own pattern, §12); the entry
# points wherever the verifier takes no argument beyond the common three (§5 adds one).
BLOCK_TASKS = {
    "evidence helpers": ALL_TASKS,
    "number parser": frozenset({"reply-to-thread", "user-mention"}),
    "entry points": ALL_TASKS - {"read-named-path-outside-workspace"},
}
BLOCK_RE = re.compile(
    r"^# --- begin shared: (?P<name>[^(\n]+?) \([^\n]*\) ---\n(?P<body>.*?)^# --- end shared ---\n",
    re.MULTILINE | re.DOTALL,
)


def verifier_paths() -> list[Path]:
    return sorted(TASKS_ROOT.glob("*/tests/verify.py"))


def blocks_of(text: str) -> dict[str, str]:
    """Block name -> full block text (markers included)."""
    return {match["name"]: match.group(0) for match in BLOCK_RE.finditer(text)}


def tasks_carrying(name: str) -> list[str]:
    return sorted(BLOCK_TASKS[name])


def canonical_blocks() -> dict[str, str]:
    return blocks_of((TASKS_ROOT / CANONICAL_TASK / "tests" / "verify.py").read_text("utf-8"))


def sync() -> list[Path]:
    """Rewrite every copy of every block from the canonical verifier; returns changed files."""
    canonical = canonical_blocks()
    changed = []
    for path in verifier_paths():
        text = path.read_text("utf-8")
        synced = BLOCK_RE.sub(lambda match: canonical.get(match["name"], match.group(0)), text)
        if synced != text:
            path.write_text(synced, "utf-8")
            changed.append(path)
    return changed


def template_blocks() -> dict[str, str]:
    """The shared blocks of the task kit's verifier template."""
    return blocks_of((TEMPLATE_VERIFIER).read_text("utf-8"))


def sync_trace_helpers() -> list[Path]:
    """Rewrite the trace helpers of every buzz-contracts verifier that carries them from the
    task kit's template; returns changed files."""
    trace_helpers = template_blocks()[TRACE_BLOCK]
    changed = []
    for path in sorted(CONTRACTS_ROOT.glob("*/tests/verify.py")):
        text = path.read_text("utf-8")
        synced = BLOCK_RE.sub(
            lambda match: trace_helpers if match["name"] == TRACE_BLOCK else match.group(0), text
        )
        if synced != text:
            path.write_text(synced, "utf-8")
            changed.append(path)
    return changed


if __name__ == "__main__":
    for changed_path in sync() + sync_trace_helpers():
        print(f"synced {changed_path}")
    sys.exit(0)
