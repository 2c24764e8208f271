"""`@Name` mention resolution, exactly as buzz-cli.md §9 (pure functions, no I/O)."""

import re
from dataclasses import dataclass

_CANDIDATE_PREFIXES = frozenset("([{<\"'*_~")
_FENCE_RE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_NPUB_URI_RE = re.compile(r"nostr:(npub1[02-9ac-hj-np-z]+)", re.IGNORECASE)
_TOKEN_CHARS_RE = re.compile(r"[\w.-]*")
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+$")


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def code_mask(content: str) -> list[bool]:
    """`mask[i]` is True when character i is inside a fenced block or an inline code span."""
    mask = [False] * len(content)
    _mask_fences(content, mask)
    _mask_inline_spans(content, mask)
    return mask


def _mask_fences(content: str, mask: list[bool]) -> None:
    fence = None
    for line in _LINE_RE.finditer(content):
        match = _FENCE_RE.match(line.group(0))
        if fence is None:
            if match is None:
                continue
            fence = match.group(1)  # an opening fence
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            fence = None  # its closing fence
        _set(mask, line.start(), line.end())


def _mask_inline_spans(content: str, mask: list[bool]) -> None:
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", content) if not mask[m.start()]]
    index = 0
    while index < len(runs):
        start, end = runs[index]
        width = end - start
        closing = next(
            (
                later
                for later in range(index + 1, len(runs))
                if runs[later][1] - runs[later][0] == width
            ),
            None,
        )
        if closing is None or _crosses_paragraph(content, end, runs[closing][0]):
            index += 1
            continue
        _set(mask, start, runs[closing][1])
        index = closing + 1


def _crosses_paragraph(content: str, start: int, end: int) -> bool:
    return re.search(r"\n[ \t]*\n", content[start:end]) is not None


def _set(mask: list[bool], start: int, end: int) -> None:
    for i in range(start, min(end, len(mask))):
        mask[i] = True


def candidate_positions(content: str, mask: list[bool]) -> list[int]:
    """Positions of `@` characters that start a mention candidate (§9.2)."""
    positions = []
    for i, char in enumerate(content):
        if char != "@" or mask[i] or i + 1 >= len(content):
            continue
        before_ok = i == 0 or content[i - 1].isspace() or content[i - 1] in _CANDIDATE_PREFIXES
        if before_ok and _is_word_char(content[i + 1]):
            positions.append(i)
    return positions


def npub_uris(content: str, mask: list[bool]) -> list[str]:
    """`npub1…` strings of `nostr:` URIs outside code regions, in text order."""
    return [m.group(1) for m in _NPUB_URI_RE.finditer(content) if not mask[m.start()]]


def display_name(profile: dict[str, object] | None) -> str | None:
    """`display_name` when a non-empty string, else `name` (protocol.md §12)."""
    if not profile:
        return None
    for key in ("display_name", "name"):
        value = profile.get(key)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True)
class Resolved:
    position: int
    pubkey: str


@dataclass(frozen=True)
class Ambiguous:
    position: int
    name: str
    pubkeys: tuple[str, ...]


@dataclass(frozen=True)
class Unresolved:
    position: int
    token: str


Resolution = Resolved | Ambiguous | Unresolved


def resolve_candidate(content: str, position: int, labels: dict[str, str]) -> Resolution:
    """Match the text after `content[position]` (an `@`) against `labels` (pubkey → label)."""
    start = position + 1
    best_length, winners = 0, []
    for pubkey, label in labels.items():
        end = start + len(label)
        if not label or end > len(content) or content[start:end].lower() != label.lower():
            continue
        if end < len(content) and _is_word_char(content[end]):
            continue
        if len(label) > best_length:
            best_length, winners = len(label), [pubkey]
        elif len(label) == best_length:
            winners.append(pubkey)
    if not winners:
        return Unresolved(position, unresolved_token(content, position))
    if len(winners) == 1:
        return Resolved(position, winners[0])
    return Ambiguous(position, content[start : start + best_length], tuple(sorted(winners)))


def unresolved_token(content: str, position: int) -> str:
    run = _TOKEN_CHARS_RE.match(content, position + 1)
    text = run.group(0) if run else ""
    return "@" + text.rstrip(".-")


def resolve_mentions(content: str, labels: dict[str, str]) -> list[Resolution]:
    """Every mention candidate outside code regions, resolved, in text order."""
    mask = code_mask(content)
    return [resolve_candidate(content, i, labels) for i in candidate_positions(content, mask)]
