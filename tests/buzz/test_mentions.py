"""buzz-cli.md §9: code regions, mention candidates and label matching (pure)."""

import pytest

from orchestra.buzz.mentions import (
    Ambiguous,
    Resolved,
    Unresolved,
    candidate_positions,
    code_mask,
    display_name,
    npub_uris,
    resolve_mentions,
)

A, B, C, D = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def masked_text(content: str) -> str:
    mask = code_mask(content)
    return "".join("#" if m else ch for ch, m in zip(content, mask, strict=True))


def test_inline_code_span_is_masked():
    assert masked_text("see `@Bob` and @Bob") == "see ###### and @Bob"


def test_double_backtick_span_needs_exactly_two_to_close():
    assert masked_text("a ``x ` @Bob`` b") == "a ############ b"


def test_unclosed_backtick_is_literal():
    assert masked_text("a `@Bob") == "a `@Bob"


def test_inline_span_does_not_cross_paragraphs():
    content = "a `x\n\n@Bob` b"
    assert masked_text(content) == content


def test_fenced_block_to_closing_fence_and_to_end():
    content = "hi\n```py\n@Bob\n```\n@Bob\n~~~\n@Carol"
    assert masked_text(content) == "hi\n" + "#" * len("```py\n@Bob\n```\n") + "@Bob\n" + "#" * 10


def test_fence_closes_only_with_same_character():
    content = "```\n~~~\n@Bob\n```\n@Bob"
    assert masked_text(content) == "#" * len("```\n~~~\n@Bob\n```\n") + "@Bob"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("@Bob hi", [0]),
        ("hi @Bob", [3]),
        ("(@Bob)", [1]),
        ("*@Bob*", [1]),
        ("alice@example.com", []),
        ("https://x.org/@Bob", []),
        ("@ Bob", []),
        ("@-Bob", []),
        ("@_bob", [0]),
        ("@Élodie", [0]),
        ("@3po", [0]),
        ("trailing @", []),
    ],
)
def test_candidate_positions(content, expected):
    assert candidate_positions(content, code_mask(content)) == expected


def test_display_name_prefers_nonempty_display_name():
    assert display_name({"display_name": "Dee", "name": "d"}) == "Dee"
    assert display_name({"display_name": "", "name": "d"}) == "d"
    assert display_name({"display_name": 3, "name": "d"}) == "d"
    assert display_name({}) is None
    assert display_name(None) is None


def test_single_and_case_insensitive():
    assert resolve_mentions("hi @alice!", {A: "Alice"}) == [Resolved(3, A)]


def test_multi_word_name_and_longest_match():
    labels = {A: "Taylor", B: "Taylor Morgan Lee"}
    assert resolve_mentions("@Taylor Morgan Lee, the sum", labels) == [Resolved(0, B)]
    assert resolve_mentions("@Taylor, the sum", labels) == [Resolved(0, A)]


def test_name_must_end_at_a_word_boundary():
    labels = {A: "Al"}
    assert resolve_mentions("@Alice", labels) == [Unresolved(0, "@Alice")]
    assert resolve_mentions("@Al's", labels) == [Resolved(0, A)]
    assert resolve_mentions("@Al.", labels) == [Resolved(0, A)]


def test_punctuation_after_name():
    labels = {A: "John Vincent Doe"}
    for tail in (".", ",", ":", "!", "?", ")", " "):
        assert resolve_mentions(f"@John Vincent Doe{tail}", labels) == [Resolved(0, A)]


def test_ambiguous_when_two_members_share_the_winning_label():
    labels = {B: "Sam", A: "sam", C: "Sammy"}
    assert resolve_mentions("@Sam done", labels) == [Ambiguous(0, "Sam", (A, B))]


def test_unresolved_token_drops_trailing_dot_and_dash():
    assert resolve_mentions("ping @Zed-bot.", {A: "Alice"}) == [Unresolved(5, "@Zed-bot")]
    assert resolve_mentions("ping @Zed.", {}) == [Unresolved(5, "@Zed")]


def test_mentions_in_code_are_ignored():
    content = "use `@Alice` or\n```\n@Alice\n```\nthanks @Bob"
    assert resolve_mentions(content, {A: "Alice", B: "Bob"}) == [Resolved(len(content) - 4, B)]


def test_npub_uris_outside_code_only():
    npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
    content = f"hi nostr:{npub} and `nostr:{npub}`"
    assert npub_uris(content, code_mask(content)) == [npub]
