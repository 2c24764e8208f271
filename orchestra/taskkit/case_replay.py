"""`orchestra task check --replay-cases`: each case of `verifier-cases.toml` played through the
real stack, as a solution script the oracle replays, and scored by the real verifier.

A case becomes a `solve.sh` that does through the `buzz` CLI what the case wrote: messages and
channel operations signed by the agent or by a fresh key it makes up, files written under its
home or workspace. The task is copied with its fixture's `{{random_hex}}` pinned to the value
the cases are written with, so a case that publishes the canary publishes the trial's. What the
CLI cannot do (another person's message, an event kind it never publishes, a message with
extra tags, an `@Name` left untagged, evidence overrides) leaves the case out, with the reason.
The script first waits for the fixture's scripted messages, which come before the case's own
entries in the relay's order.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from orchestra.config.errors import display_path
from orchestra.config.fixture import RANDOM_HEX_PLACEHOLDER, USER_ACTOR
from orchestra.config.task import Task
from orchestra.documents.enums import TrialStatus
from orchestra.errors import OrchestraError
from orchestra.nostr.kinds import Kind
from orchestra.paths import TaskPaths
from orchestra.taskkit.cases import (
    AGENT,
    AGENT_ID,
    CHANNEL_ID,
    FRESH_KEY,
    TASK_EVENT_ID,
    Case,
    CaseEvent,
    CaseMessage,
    CaseWorld,
    cases_path,
    load_cases,
)
from orchestra.taskkit.stack import Replay, StackOptions, StackRun, replay
from orchestra.taskkit.verifier import CASE_RANDOM_HEX

#: the pubkey of the first profile row `buzz users get` prints
FIRST_PUBKEY = "python3 -c 'import json, sys; print(json.load(sys.stdin)[0][\"pubkey\"])'"
#: where `/workspace/...` of a case lands: the agent's working directory
CASE_WORKSPACE = PurePosixPath("/workspace")

PREAMBLE = """#!/usr/bin/env bash
# A verifier case played through the real stack (orchestra task check --replay-cases).
set -euo pipefail
: "${BUZZ_CHANNEL_ID:?BUZZ_CHANNEL_ID is required}"
: "${BUZZ_REPLY_TO:?BUZZ_REPLY_TO is required}"
: "${BUZZ_REQUESTER_PUBKEY:?BUZZ_REQUESTER_PUBKEY is required}"
STATE_DIR="${TMPDIR:-/tmp}/buzz-case-${BUZZ_CHANNEL_ID}"
mkdir -p "$STATE_DIR"
WORKSPACE="$PWD"
[ -s "$STATE_DIR/fresh.key" ] || python3 -c 'import secrets; print(secrets.token_hex(32))' \\
  >"$STATE_DIR/fresh.key"
# as STEP KEY: run the rest once per STEP, signed by the agent (KEY "") or the fresh key
as() {
  local step="$1" key="$2"; shift 2
  [ -e "$STATE_DIR/$step.json" ] && return 0
  if [ -n "$key" ]; then
    BUZZ_PRIVATE_KEY="$(cat "$STATE_DIR/fresh.key")" "$@" >"$STATE_DIR/$step.tmp"
  else
    "$@" >"$STATE_DIR/$step.tmp"
  fi
  mv "$STATE_DIR/$step.tmp" "$STATE_DIR/$step.json"
}
# scripted LABEL CONTENT: wait for the fixture's scripted message (some come after a delay:
# the case's own entries follow them in the relay's order); its id in $STATE_DIR/scripted-LABEL
scripted() {
  local id
  for _ in $(seq 1 300); do
    if id="$(buzz messages get --channel "$BUZZ_CHANNEL_ID" --all | python3 -c '
import json, sys
found = [e["id"] for e in json.load(sys.stdin) if e["content"].strip() == sys.argv[1].strip()]
print(found[0]) if found else sys.exit(1)' "$2")"; then
      echo "$id" >"$STATE_DIR/scripted-$1"
      return 0
    fi
    sleep 1
  done
  echo "the scripted message $1 never came" >&2
  return 1
}
# field STEP NAME: a field of a step's JSON output
field() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \\
    "$STATE_DIR/$1.json" "$2"
}
"""


class Unplayable(OrchestraError):
    """What the buzz CLI cannot do of a case (the check notes it and goes on)."""


@dataclass
class _Script:
    world: CaseWorld
    lines: list[str] = field(default_factory=list)
    #: case channel name -> the shell expression of its real id
    channels: dict[str, str] = field(default_factory=lambda: {CHANNEL_ID: '"$BUZZ_CHANNEL_ID"'})
    #: case message id -> the shell expression of its real event id
    events: dict[str, str] = field(default_factory=lambda: {TASK_EVENT_ID: '"$BUZZ_REPLY_TO"'})

    def channel(self, name: str | None) -> str:
        if name is None:
            return self.channels[CHANNEL_ID]
        if name not in self.channels:
            raise Unplayable(f'channel "{name}" is not created by the case')
        return self.channels[name]

    def pubkey(self, who: str) -> str:
        if who == USER_ACTOR:
            return '"$BUZZ_REQUESTER_PUBKEY"'
        if who == AGENT:
            return f'"$(buzz users get | {FIRST_PUBKEY})"'
        names = {row["identity_id"]: row["name"] for row in self.world.directory}
        if who in names:
            lookup = f"buzz users get --name {shlex.quote(names[who])} --exact"
            return f'"$({lookup} | {FIRST_PUBKEY})"'
        return shlex.quote(who)

    def run(self, step: str, author: str, command: str) -> None:
        if author not in (AGENT, FRESH_KEY):
            raise Unplayable(f'"{author}" signs an entry (only the agent or a fresh key can)')
        key = "fresh" if author == FRESH_KEY else '""'
        self.lines.append(f"as {step} {key} {command}")


def _message(script: _Script, step: str, message: CaseMessage) -> None:
    if message.kind != Kind.MESSAGE or message.tags:
        raise Unplayable("a message of another kind or with extra tags")
    untagged = [
        name
        for name, who in script.world.names().items()
        if f"@{name}" in message.content and who not in message.mention
    ]
    if untagged:
        raise Unplayable(f"the CLI p-tags the @{untagged[0]} the case leaves untagged")
    command = [f"buzz messages send --channel {script.channel(message.channel)} --content -"]
    if message.reply_to is not None:
        if message.reply_to not in script.events:
            raise Unplayable(f'a reply to "{message.reply_to}", no earlier message')
        command.append(f"--reply-to {script.events[message.reply_to]}")
    command += [f"--mention {script.pubkey(who)}" for who in message.mention]
    text = shlex.quote(message.content)
    script.run(step, message.author, f"{' '.join(command)} <<<{text}")
    if message.id is not None:
        script.events[message.id] = f'"$(field {step} event_id)"'


def _tag(event: CaseEvent, name: str) -> str | None:
    return next((tag[1] for tag in event.tags if len(tag) > 1 and tag[0] == name), None)


def _event(script: _Script, step: str, event: CaseEvent) -> None:
    flags: list[tuple[str, str | None]]
    if event.kind == Kind.CREATE_CHANNEL and event.channel is not None:
        flags = [("--name", _tag(event, "name") or event.channel)]
        flags += [
            ("--visibility", _tag(event, "visibility")),
            ("--description", _tag(event, "about")),
        ]
        command = "buzz channels create"
        script.channels[event.channel] = f'"$(field {step} channel_id)"'
    elif event.kind == Kind.PUT_USER:
        members = [tag[1] for tag in event.tags if tag[:1] == ["p"] and len(tag) > 1]
        if not event.mention and not members:
            raise Unplayable("a membership event without a member (mention or p tag)")
        who = script.pubkey(event.mention[0]) if event.mention else shlex.quote(members[0])
        command = f"buzz channels add-member --channel {script.channel(event.channel)}"
        command += f" --pubkey {who}"
        flags = [("--role", _tag(event, "role"))]
    elif event.kind == Kind.JOIN_REQUEST:
        command = f"buzz channels join --channel {script.channel(event.channel)}"
        flags = []
    elif event.kind == Kind.EDIT_METADATA:
        command = f"buzz channels update --channel {script.channel(event.channel)}"
        flags = [("--name", _tag(event, "name")), ("--description", _tag(event, "about"))]
        flags.append(("--visibility", _tag(event, "visibility")))
    elif event.kind == Kind.PROFILE:
        profile = json.loads(event.content or "{}")
        command = "buzz users set-profile"
        flags = [(f"--{key.replace('_', '-')}", profile.get(key)) for key in ("name", "about")]
        flags.append(("--display-name", profile.get("display_name")))
    else:
        raise Unplayable(f"an event of kind {event.kind} (no buzz command publishes it)")
    given = " ".join(f"{flag} {shlex.quote(value)}" for flag, value in flags if value)
    script.run(step, event.author, f"{command} {given}")


def _file(script: _Script, home: str | None, path: str, content: str) -> None:
    where = PurePosixPath(path)
    if home is not None and where.is_relative_to(home):
        target = f'"$HOME"/{shlex.quote(str(where.relative_to(home)))}'
    elif where.is_relative_to(CASE_WORKSPACE):
        target = f'"$WORKSPACE"/{shlex.quote(str(where.relative_to(CASE_WORKSPACE)))}'
    else:
        raise Unplayable(f"a file outside the home and {CASE_WORKSPACE} ({path})")
    script.lines.append(
        f'mkdir -p "$(dirname {target})" && printf %s {shlex.quote(content)} >{target}'
    )


def case_script(world: CaseWorld, case: Case) -> str:
    """The solution script that plays `case`; `Unplayable` says what it cannot play."""
    if case.evidence:
        raise Unplayable("it overrides evidence fields")
    script = _Script(world)
    for message in world.task.fixture.scripted_messages:
        rendered = message.render(AGENT_ID, world.user_name)
        script.lines.append(f"scripted {shlex.quote(message.label)} {shlex.quote(rendered)}")
        script.events[message.label] = f'"$(cat "$STATE_DIR/scripted-{message.label}")"'
    for index, entry in enumerate(case.steps(), start=1):
        step = f"step-{index}"
        if isinstance(entry, CaseEvent):
            _event(script, step, entry)
        else:
            _message(script, step, entry)
    for file in case.file:
        _file(script, world.task.fixture.home, file.path, file.content)
    return PREAMBLE + "\n".join(script.lines) + '\ntouch "$STATE_DIR/done"\n'


def pinned_copy(task_dir: Path, into: Path) -> Path:
    """A copy of the task whose fixture files render the cases' `{{random_hex}}` value."""
    copy = into / task_dir.name
    shutil.copytree(task_dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
    fixture = TaskPaths(copy).fixture_toml
    if fixture.is_file():
        text = fixture.read_text(encoding="utf-8")
        fixture.write_text(text.replace(RANDOM_HEX_PLACEHOLDER, CASE_RANDOM_HEX), "utf-8")
    return copy


@dataclass
class CaseReplays:
    """What replaying one task's cases found: problems (a case the real stack scored otherwise)
    and notes (the cases left out, and why)."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def replay_cases(tasks: list[Task], stack: StackOptions) -> dict[Path, CaseReplays]:
    """Every playable case of every task through the real stack: one run per case number (a
    run holds each task once, under its own directory name, which its verifier checks)."""
    found = {task.dir: CaseReplays() for task in tasks}
    rounds: dict[Path, list[tuple[Case, str]]] = {}
    for task in tasks:
        world = CaseWorld(task)
        where = display_path(cases_path(task.dir))
        rounds[task.dir] = []
        for case in load_cases(task.dir):
            try:
                rounds[task.dir].append((case, case_script(world, case)))
            except Unplayable as why:
                found[task.dir].notes.append(f'{where}: case "{case.name}" not replayed: {why}')
    with tempfile.TemporaryDirectory(prefix="orchestra-task-cases-") as scratch:
        options = dataclasses.replace(stack, work_dir=Path(scratch))
        for number in range(1, max(map(len, rounds.values()), default=0) + 1):
            name = f"case-{number}"
            scripts, played = {}, {}
            for task_dir, cases in rounds.items():
                if number <= len(cases):
                    case, text = cases[number - 1]
                    copy = pinned_copy(task_dir, Path(scratch) / name / "sources")
                    script = Path(scratch) / name / "scripts" / f"{task_dir.name}.sh"
                    script.parent.mkdir(parents=True, exist_ok=True)
                    script.write_text(text, encoding="utf-8")
                    scripts[copy] = script
                    played[task_dir] = case
            run = replay(name, scripts, options)
            for task_dir, case in played.items():
                where = f'{display_path(cases_path(task_dir))}: case "{case.name}" through the real stack'
                found[task_dir].problems += _judged(
                    where, case, run.replays.get(task_dir.name), run
                )
    return found


def _judged(where: str, case: Case, replayed: Replay | None, run: StackRun) -> list[str]:
    """The metrics the real stack gave that differ from the case's expectations."""
    if replayed is None:
        return [f"{where}: no trial ran ({run.why_no_trial()})"]
    result = replayed.result
    if result.status is not TrialStatus.SCORED:
        info = result.exception_info
        reason = f"{info.exception_type}: {info.exception_message}" if info else str(result.status)
        return [f"{where}: the trial ended in {result.status}: {reason}"]
    rewards = result.rewards or {}
    wrong = sorted(name for name, value in case.expect.items() if rewards.get(name) != value)
    if not wrong:
        return []
    got = ", ".join(
        f"{name} = {rewards.get(name)} (expected {case.expect[name]:g})" for name in wrong
    )
    return [f"{where}: {got}"]
