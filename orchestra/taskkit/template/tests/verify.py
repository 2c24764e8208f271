#!/usr/bin/env python3
"""Verifier of __NAME__: the agent answers `ready` in the requester's thread.

Standard library only, Python 3.9+; the contract is the buzz-native one (docs/writing-a-task.md).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# --- begin shared: evidence helpers (keep identical; tests/dataset/test_shared_snippets.py) ---
# Each verifier defines METRIC_NAMES (every key of reward.json) and REWARD_PARTS (the metrics
# whose conjunction is `reward`) before calling these helpers (dataset.md §2.6).


def as_dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list:
    return value if isinstance(value, list) else []


def content(message: dict | None) -> str:
    value = as_dict(message).get("content")
    return value if isinstance(value, str) else ""


def mentions(message: dict | None) -> list:
    return as_list(as_dict(message).get("mentioned_pubkeys"))


def has_tag(message: dict, tag: list) -> bool:
    return tag in as_list(message.get("tags"))


def message_id(message: dict | None) -> object:
    return as_dict(message).get("id")


def directory_by(evidence: dict, key: str) -> dict:
    """Directory rows keyed by `key` (`name` or `identity_id`); later rows win."""
    rows = [row for row in as_list(evidence.get("directory")) if isinstance(row, dict)]
    return {row[key]: row for row in rows if isinstance(row.get(key), str)}


def pubkey_of(row: object) -> str | None:
    pubkey = as_dict(row).get("pubkey")
    return pubkey if isinstance(pubkey, str) and pubkey else None


class Trial:
    """The shared definitions of dataset.md §2.6 over one evidence document."""

    def __init__(self, evidence: dict) -> None:
        self.evidence = evidence
        self.trial = as_dict(evidence.get("trial"))
        self.identities = as_dict(evidence.get("identities"))
        self.task_event_id = evidence.get("task_event_id")
        self.channel_id = self.trial.get("channel_id")
        agents = [
            row for row in self.identities.values() if as_dict(row).get("role") == "orchestrator"
        ]
        self.single_orchestrator = len(agents) == 1
        # Without exactly one orchestrator with a pubkey, nothing counts as authored.
        self.agent_pubkey = pubkey_of(agents[0]) if self.single_orchestrator else None
        self.messages = [m for m in as_list(evidence.get("messages")) if isinstance(m, dict)]
        self.authored = [m for m in self.messages if self.is_authored(m)]
        roots = [i for i, m in enumerate(self.messages) if m.get("id") == self.task_event_id]
        self.root_indexes = roots
        first = roots[0] if len(roots) == 1 else -1
        self.after_root = [m for m in self.messages[first + 1 :] if self.is_authored(m)]

    def is_authored(self, message: dict) -> bool:
        return self.agent_pubkey is not None and message.get("pubkey") == self.agent_pubkey

    def user_pubkey(self, display_name: str) -> str | None:
        return pubkey_of(self.identities.get(display_name))

    def header_ok(self, task_name: str) -> bool:
        version = self.evidence.get("schema_version")
        return type(version) is int and version == 1 and self.evidence.get("task_name") == task_name

    def complete_snapshot(self, task_name: str) -> bool:
        """Right schema and task, not truncated, one orchestrator (every task checks these)."""
        truncated = self.evidence.get("truncated")
        return self.header_ok(task_name) and truncated is False and self.single_orchestrator

    def single_answer(self, task_name: str) -> bool:
        """A complete snapshot in which the agent authored exactly one message."""
        return self.complete_snapshot(task_name) and len(self.authored) == 1

    def in_channel(self, message: dict | None) -> bool:
        message = as_dict(message)
        channel = self.channel_id
        return message.get("channel_id") == channel and has_tag(message, ["h", channel])

    def replies_to(self, message: dict | None, root: object) -> bool:
        return isinstance(root, str) and as_dict(message).get("reply_to_event_id") == root

    def replies_to_task(self, message: dict | None) -> bool:
        return self.replies_to(message, self.task_event_id)

    def wakes(self, message: dict, pubkeys: set, names: tuple) -> bool:
        """True when `message` p-tags one of `pubkeys` or writes `@Name` for one of `names`."""
        tagged = any(pubkey in mentions(message) for pubkey in pubkeys)
        return tagged or any(f"@{name}" in content(message) for name in names)


def zero_metrics() -> dict:
    return {name: 0.0 for name in METRIC_NAMES}


def score_safely(evidence: object, scorer, **expectations) -> tuple:
    """Runs `scorer(Trial, **expectations) -> (checks, details)`; never raises (fail closed)."""
    if not isinstance(evidence, dict):
        return zero_metrics(), {"error": "evidence root is not an object"}
    try:
        checks, details = scorer(Trial(evidence), **expectations)
        metrics = {name: 1.0 if checks[name] else 0.0 for name in METRIC_NAMES if name != "reward"}
        metrics["reward"] = 1.0 if all(metrics[name] == 1.0 for name in REWARD_PARTS) else 0.0
    except Exception as error:  # a scoring bug must still leave a reward.json behind
        return zero_metrics(), {"error": f"internal: {type(error).__name__}: {error}"}
    return metrics, details


def read_text(path: str) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8: {error}") from None


def read_json(path: str) -> object:
    text = read_text(path)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"{path}: not valid JSON: {error}") from None


def verifier_arguments(description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--evidence", required=True, help="buzz-evidence.json to score")
    parser.add_argument("--reward", required=True, help="where to write reward.json")
    parser.add_argument("--details", required=True, help="where to write details.json")
    return parser


def run(args: argparse.Namespace, score) -> int:
    """Scores the evidence file and writes reward.json and details.json (exit status 0)."""
    try:
        metrics, details = score(read_json(args.evidence))
    except (OSError, ValueError) as error:  # unreadable inputs; scoring itself never raises
        metrics, details = zero_metrics(), {"error": str(error)}
    outputs = (
        (args.reward, json.dumps(metrics, sort_keys=True)),
        (args.details, json.dumps(details, sort_keys=True, indent=2)),
    )
    try:
        for path, text in outputs:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text + "\n", encoding="utf-8")
    except OSError as error:
        print(f"verify.py: cannot write results: {error}", file=sys.stderr)
        return 1
    return 0


# --- end shared ---

TASK_NAME = "__DIR__"
EXPECTED_WORD = "ready"
REWARD_PARTS = ("evidence_complete", "reply_in_thread", "answer_correct")
METRIC_NAMES = (*REWARD_PARTS, "reward")


def _score(trial: Trial) -> tuple:
    final = trial.after_root[-1] if trial.after_root else None
    words = re.findall(r"[a-z]+", content(final).casefold())
    checks = {
        "evidence_complete": trial.complete_snapshot(TASK_NAME)
        and isinstance(trial.task_event_id, str)
        and len(trial.root_indexes) == 1
        and isinstance(trial.channel_id, str),
        "reply_in_thread": final is not None
        and trial.in_channel(final)
        and trial.replies_to_task(final),
        "answer_correct": EXPECTED_WORD in words,
    }
    details = {
        "task_event_id": trial.task_event_id,
        "selected_message_id": message_id(final),
        "selected_message_content": content(final) if final is not None else None,
    }
    return checks, details


# --- begin shared: entry points (keep identical; tests/dataset/test_shared_snippets.py) ---
def score_evidence(evidence: object) -> tuple:
    """(metrics, details) of one evidence document; never raises."""
    return score_safely(evidence, _score)


def main(argv: list | None = None) -> int:
    return run(verifier_arguments(__doc__).parse_args(argv), score_evidence)


if __name__ == "__main__":
    sys.exit(main())
# --- end shared ---
