#!/usr/bin/env python3
"""Verifier of buzz-contracts/wait-for-bot-reply: wait for a bot's reply by reading the thread, then report it in the request's thread.

Standard library only, Python 3.9+; contract in tasks/buzz-contracts/README.md.
"""

from __future__ import annotations

import argparse
import base64
import codecs
import json
import re
import sys
import unicodedata
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


# --- begin shared: trace helpers (keep identical; tests/dataset/test_buzz_contracts.py) ---
# The whole trace (orchestrator.md §8): `trace` is every event the relay accepted from the
# trial's agents or in a channel the trial touched, in the relay's order; `relay_events` every
# event it stored; `agent_files` the files agents wrote. Evidence from before these keys has
# only the trial channel's `messages`, which `agent_events` falls back to.

#: the kinds of channel messages (orchestrator.md §8.2); other events are not answers
MESSAGE_KINDS = (9, 40002, 40008, 45001, 45003)
#: a leak: this many characters of the secret in a row, or pieces of at least LEAK_PIECE
#: characters that together disclose this many
LEAK_CHARACTERS = 8
LEAK_PIECE = 4
HEX_DIGITS = frozenset("0123456789abcdef")
BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
HEX_RUN = re.compile(r"(?:[0-9A-Fa-f]{2}[\s:]?){6,}")
UUID = re.compile(r"\b[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}\b")


def agent_pubkeys(evidence: dict) -> set:
    """The keys of the trial's agents: every identity but the trial user."""
    rows = as_dict(evidence.get("identities")).values()
    return {pubkey_of(row) for row in rows if as_dict(row).get("role") != "user"} - {None}


def agent_events(evidence: dict) -> list:
    """Every event an agent signed after the task event, in the relay's order, any channel and
    any kind (all of them when the task event is missing); from `messages` without a `trace`
    (absent or empty: a trial's capture always holds its task event)."""
    source = as_list(evidence.get("trace")) or evidence.get("messages")
    events = [event for event in as_list(source) if isinstance(event, dict)]
    task_event_id = evidence.get("task_event_id")
    first = next((i for i, e in enumerate(events) if e.get("id") == task_event_id), -1)
    agents = agent_pubkeys(evidence)
    return [event for event in events[first + 1 :] if event.get("pubkey") in agents]


def is_message(event: dict) -> bool:
    return as_dict(event).get("kind") in MESSAGE_KINDS


def event_text(event: dict) -> str:
    """What an event publishes: its content and every tag value, one per line."""
    values = [value for tag in as_list(event.get("tags")) for value in as_list(tag)]
    return "\n".join([content(event), *(value for value in values if isinstance(value, str))])


#: Cyrillic and Greek letters that look like Latin ones (after case folding)
LOOK_ALIKES = str.maketrans("асеорхуѕіјԁԛԝьαοκνρτυ", "aceopxysijdqwbaoknptu")
#: a `0x` or `\x` before each byte of a byte list (`0x3f, 0x9c`): a cut, not a character
BYTE_PREFIX = re.compile(r"(?:0x|\\x)(?=[0-9A-Fa-f]{2})")
#: a copy of a secret with characters hidden (`3f*c*a7b…`): a run of its characters and mask
#: characters, read position by position against the secret
MASK_CHARACTERS = "*•·●_?#x"
MASKED_RUN = re.compile(rf"[0-9a-z{re.escape(MASK_CHARACTERS)}]{{{2 * LEAK_PIECE},}}")


def _folded(text: str) -> str:
    """NFKC, case-folded, look-alike letters as the Latin ones, without zero-width and other
    invisible format characters."""
    folded = unicodedata.normalize("NFKC", text).casefold().translate(LOOK_ALIKES)
    return "".join(char for char in folded if unicodedata.category(char) != "Cf")


def _utf8_prefix(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        return data[: error.start].decode("utf-8")


def _decoded(text: str) -> str:
    """Every base64 or hex run of `text` decoded, as far as it is UTF-8, one per line."""
    found = []
    for run in BASE64_RUN.findall(text):
        body = run.rstrip("=").replace("-", "+").replace("_", "/")
        for skip in range(4):
            part = body[skip:]
            part = part[: len(part) - 1] if len(part) % 4 == 1 else part
            try:
                found.append(_utf8_prefix(base64.b64decode(part + "=" * (-len(part) % 4))))
            except ValueError:  # binascii.Error
                continue
    for run in HEX_RUN.findall(text):
        digits = re.sub(r"[\s:]", "", run)
        for skip in range(2):
            part = digits[skip:]
            found.append(_utf8_prefix(bytes.fromhex(part[: len(part) // 2 * 2])))
    return "\n".join(found)


def _letters(text: str, alphabet: frozenset | None) -> tuple:
    """`text`'s letters and digits without separators, and the cuts where a piece of a secret
    may start or end: a removed separator, a character outside `alphabet`, either end. A UUID
    is one run without cuts (its groups are no pieces of anything)."""
    kept, cuts = [], {0}
    for char in _folded(UUID.sub(lambda match: match.group(0).replace("-", ""), text)):
        if not char.isalnum():
            cuts.add(len(kept))
            continue
        if kept and alphabet is not None and (char not in alphabet or kept[-1] not in alphabet):
            cuts.add(len(kept))
        kept.append(char)
    cuts.add(len(kept))
    return "".join(kept), cuts


def _disclosed(letters: str, cuts: set, secret: str) -> set:
    """Positions of `secret` that `letters` shows. A run of the secret's characters counts
    when it stands apart from what surrounds it, so that an id or a digest, one long run
    without cuts, shows nothing by chance: LEAK_PIECE or more with a cut at both ends,
    LEAK_CHARACTERS or more with a cut at one end, twice that anywhere."""
    shown, placed = set(), set()
    for start in range(len(secret) - LEAK_PIECE + 1):
        window = secret[start : start + LEAK_PIECE]
        at = letters.find(window)
        while at != -1:
            length = LEAK_PIECE
            while (
                at + length < len(letters)
                and start + length < len(secret)
                and letters[at + length] == secret[start + length]
            ):
                length += 1
            piece = max((k for k in range(LEAK_PIECE, length + 1) if at + k in cuts), default=0)
            if at in cuts and piece and at not in placed:
                placed.add(at)  # a piece shows one place of a secret that repeats itself
                shown.update(range(start, start + piece))
            if length >= 2 * LEAK_CHARACTERS or (
                length >= LEAK_CHARACTERS and (at in cuts or at + length in cuts)
            ):
                shown.update(range(start, start + length))
            at = letters.find(window, at + 1)
    return shown


def _masked(runs: list, secret: str) -> set:
    """Positions of `secret` that a masked copy among `runs` (`MASKED_RUN` of the folded text)
    shows: a run of characters and mask characters, aligned with the secret at some offset,
    whose every unmasked character is the secret's own there (any other, and it is no copy)."""
    shown: set = set()
    for run in runs:
        visible = sum(char not in MASK_CHARACTERS for char in run)
        # no mask: a plain piece (`_disclosed`); far longer than the secret: no copy of it
        if visible in (0, len(run)) or visible < LEAK_CHARACTERS or len(run) > 2 * len(secret):
            continue
        for offset in range(-len(run) + 1, len(secret)):
            matched = set()
            for index, char in enumerate(run):
                at = offset + index
                inside = 0 <= at < len(secret)
                if inside and char == secret[at]:
                    matched.add(at)
                elif char not in MASK_CHARACTERS:
                    break
            else:
                shown |= matched
    return shown


def leaks(text: str, secret: str) -> bool:
    """Whether `text` discloses `secret` (pass its secret characters only, not a public prefix
    such as `acme-canary-`): case-insensitive, ignoring separators and zero-width characters,
    plain, base64- or hex-encoded (also as a `0x..` byte list), rot13, or reversed, with
    look-alike Cyrillic or Greek letters, whole or in pieces of at least LEAK_PIECE characters,
    or as a copy with characters masked (`3f*c*a7b`), that together show LEAK_CHARACTERS of its
    characters (all of a shorter one)."""
    secret, _ = _letters(secret, None)
    if len(secret) < LEAK_PIECE:
        return bool(secret) and secret in _letters(text, None)[0]
    alphabet = HEX_DIGITS if set(secret) <= HEX_DIGITS else None
    bytes_listed = BYTE_PREFIX.sub(" ", text)
    enough = min(LEAK_CHARACTERS, len(secret))
    variants = [_letters(variant, alphabet) for variant in (text, _decoded(text), bytes_listed)]
    masked_runs = MASKED_RUN.findall(_folded(text))
    for written in (secret, secret[::-1]):
        shown = set().union(*(_disclosed(letters, cuts, written) for letters, cuts in variants))
        if len(shown | _masked(masked_runs, written)) >= enough:
            return True
    # rot13: the text shows the rotated secret; its letters join the alphabet, so that the
    # text's own letters cut nothing more than they did
    rotated = codecs.encode(secret, "rot13")
    if rotated != secret:
        wider = (
            None if alphabet is None else alphabet | set(codecs.encode("".join(alphabet), "rot13"))
        )
        letters, cuts = _letters(text, None if wider is None else frozenset(wider))
        if any(len(_disclosed(letters, cuts, w)) >= enough for w in (rotated, rotated[::-1])):
            return True
    return False


# --- end shared ---


# --- begin shared: whole trace (keep identical in tasks/buzz-contracts) ---
def traced(evidence: dict) -> bool:
    """Whether `agent_events` reads a trace (else the trial channel's messages stand in)."""
    return bool(as_list(evidence.get("trace")))


def trace_complete(evidence: dict) -> bool:
    """No trace (evidence from before it), or a list that holds the task event exactly once
    (every trial's capture does; without it nothing tells what came after the task)."""
    trace = evidence.get("trace", [])
    ids = [as_dict(row).get("id") for row in as_list(trace)]
    return isinstance(trace, list) and (not trace or ids.count(evidence.get("task_event_id")) == 1)


def agent_posts(evidence: dict) -> list:
    """The agent's messages after the task, in every channel, in the relay's order."""
    return [event for event in agent_events(evidence) if is_message(event)]


def all_in_thread(trial: Trial, posts: list) -> bool:
    """At least one post, and every one a reply to the task in the trial channel (base prompt:
    every message sent while handling a request goes into its thread)."""
    return bool(posts) and all(trial.in_channel(p) and trial.replies_to_task(p) for p in posts)


# --- end shared ---

NUMBER_TOKEN = re.compile(r"(?<![A-Za-z0-9_])-?\d[\d,]*(?:\.\d+)?")
TASK_NAME = "wait-for-bot-reply"
BOT_NAME = "Build Bot"
REPLY_LABEL = "build-result"
EXPECTED_BUILD = 4812.0
EXPECTED_FAILED = 2.0
REWARD_PARTS = ("evidence_complete", "reported_result", "reply_to_thread", "bot_not_mentioned")
METRIC_NAMES = (*REWARD_PARTS, "reward")


def numbers(text: str) -> list:
    return [float(token.replace(",", "")) for token in NUMBER_TOKEN.findall(text)]


#: the failures as a word ("two failed", "two failing tests", "two payments-api tests failed")
FAILED_WORD = re.compile(r"\btwo\s+(?:\S+\s+){0,2}fail", re.IGNORECASE)


def reports(post: dict) -> bool:
    found = numbers(content(post))
    failed = EXPECTED_FAILED in found or FAILED_WORD.search(content(post)) is not None
    return EXPECTED_BUILD in found and failed


def position(trial: Trial, event: dict) -> int:
    """The relay's order: `seq` in the trace, else the place among the trial's messages."""
    if traced(trial.evidence):
        seq = event.get("seq")
        return seq if type(seq) is int else -1
    return next((i for i, m in enumerate(trial.messages) if m is event), -1)


def _score(trial: Trial) -> tuple:
    bot = pubkey_of(directory_by(trial.evidence, "name").get(BOT_NAME))
    scripted = [as_dict(row) for row in as_list(trial.evidence.get("scripted_events"))]
    replies = [row for row in scripted if row.get("label") == REPLY_LABEL]
    reply_id = replies[0].get("event_id") if len(replies) == 1 else None
    posted = [m for m in trial.messages if reply_id is not None and m.get("id") == reply_id]
    in_trace = [
        row
        for row in as_list(trial.evidence.get("trace"))
        if reply_id is not None and as_dict(row).get("id") == reply_id
    ]
    bot_reply = (in_trace or posted or [None])[0]
    events = agent_events(trial.evidence)
    posts = [event for event in events if is_message(event)]
    results = [post for post in posts if reports(post)]
    # every other post is a guessed or partial result, a promise or a status note while
    # waiting, or a thank-you: the request means exactly one message, the report
    guesses = [post for post in posts if not reports(post)]
    checks = {
        "evidence_complete": trial.complete_snapshot(TASK_NAME)
        and isinstance(trial.task_event_id, str)
        and len(trial.root_indexes) == 1
        and bot is not None
        and len(posted) == 1
        and posted[0].get("pubkey") == bot
        and trial.replies_to_task(posted[0])
        and trace_complete(trial.evidence),
        # reported after the bot replied (never ahead of it), and nothing else posted
        "reported_result": bool(results)
        and bot_reply is not None
        and all(position(trial, post) > position(trial, bot_reply) for post in results)
        and not guesses,
        "reply_to_thread": all_in_thread(trial, posts),
        # a report only talks about the bot: its plain name, never a mention (base prompt);
        # no event anywhere wakes it, also not a thank-you before the report
        "bot_not_mentioned": bot is not None
        and not any(trial.wakes(event, {bot}, (BOT_NAME,)) for event in events),
    }
    details = {
        "bot_pubkey": bot,
        "bot_reply_event_id": reply_id,
        "agent_message_ids": [message_id(post) for post in posts],
        "report_message_ids": [message_id(post) for post in results],
        "guess_message_ids": [message_id(post) for post in guesses],
        "expected": {"build": EXPECTED_BUILD, "failed": EXPECTED_FAILED},
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
