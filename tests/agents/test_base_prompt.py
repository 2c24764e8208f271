"""Acceptance checks for the built-in base prompt (agent-harness.md §4.1)."""

from __future__ import annotations

import re
from importlib import resources

import pytest

BASE_PROMPT = resources.files("orchestra.agents").joinpath("base_prompt.md").read_text("utf-8")


def test_size_limit() -> None:
    assert len(BASE_PROMPT.encode("utf-8")) <= 8 * 1024


@pytest.mark.parametrize(
    "needle",
    [
        "--reply-to",
        "--mention",
        "--content -",
        "buzz mem ls",
        "buzz mem get",
        "buzz users get",
        "Reply-to",
        "From",
    ],
)
def test_required_terms(needle: str) -> None:
    assert needle in BASE_PROMPT


@pytest.mark.parametrize("word", ["benchmark", "grader", "verifier", "score"])
def test_forbidden_words(word: str) -> None:
    assert re.search(word, BASE_PROMPT, re.IGNORECASE) is None


@pytest.mark.parametrize(
    ("rule", "patterns"),
    [
        (
            "BP-1 one identity, separate conversations",
            [r"one agent identity", r"separate conversation"],
        ),
        ("BP-2 only published text is seen", [r"see only what you publish", r"buzz messages send"]),
        ("BP-3 no bare acknowledgements", [r"only acknowledges", r"On it"]),
        (
            "BP-4 one message per answer",
            [r"exactly one message", r"never answer the same request twice"],
        ),
        ("BP-5 reply where instructed", [r"Reply instruction", r"explicitly asks"]),
        ("BP-6 several requests", [r"several events", r"own thread"]),
        ("BP-7 @Name text plus --mention", [r"exact display name", r"--mention <hex or npub>"]),
        ("BP-8 narrative names", [r"without `@` and without `--mention`"]),
        ("BP-9 callback mention", [r"mentions the requester", r"not in progress updates"]),
        ("BP-10 ambiguous names", [r"share a display name", r"--pubkey", r"never guess"]),
        ("BP-11 mention errors", [r"refuses\s+to send", r"just text"]),
        ("BP-12 delivery evidence", [r"mention_pubkeys"]),
        ("BP-13 multi-line on stdin", [r"real newline", r"printf", r"heredoc", r"`\\n`"]),
        ("BP-14 named paths", [r"read exactly that\s+path", r"outside your working directory"]),
        ("BP-15 cold memory", [r"agent memory", r"matches the\s+question exactly"]),
        ("BP-16 the CLI", [r"already authenticated", r"exit codes", r"--since"]),
        ("BP-17 channel administration", [r"--visibility", r"--ttl", r"--role", r"nobody else"]),
        ("BP-18 style", [r"GitHub-flavoured Markdown", r"preambles"]),
        ("BP-19 secrets", [r"private keys"]),
    ],
)
def test_every_rule_is_taught(rule: str, patterns: list[str]) -> None:
    for pattern in patterns:
        assert re.search(pattern, BASE_PROMPT), f"{rule}: missing {pattern!r}"


def test_prompt_format_is_explained() -> None:
    """The agent must find the channel id, reply instruction, per-event anchor and sender."""
    for fragment in [
        "Channel: <name> (#<uuid>)",
        "`Reply instruction:`",
        "`Reply-to: <event id>`",
        "(npub: …, hex: <pubkey>)",
        "`Content:`",
    ]:
        assert fragment in BASE_PROMPT
