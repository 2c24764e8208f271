"""The composed prompt of each agent (orchestrator.md §7.8): its roster entry's artifacts and
the team block. `buzz-acp` places it in the `[System]` section of the session's system prompt
(`orchestra.agents.acp.prompt.compose_system_prompt`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from orchestra.config.manifest import RosterEntry, read_artifact


@dataclass(frozen=True)
class TeamMember:
    agent_id: str
    role: str
    pubkey: str


def _team_block(
    me: TeamMember,
    teammates: Sequence[TeamMember],
    channel_id: str,
    user_name: str,
    user_pubkey: str,
) -> str:
    lines = [
        "## Your team",
        "",
        f"You are `{me.agent_id}` (pubkey `{me.pubkey}`).",
        f"The team coordinates in Buzz channel `{channel_id}`.",
        f"Tasks come from the user `{user_name}` (pubkey `{user_pubkey}`); "
        "address your final report to them.",
        "",
    ]
    if teammates:
        lines += ["| Name | Role | Pubkey |", "|------|------|--------|"]
        lines += [f"| {m.agent_id} | {m.role} | `{m.pubkey}` |" for m in teammates]
    else:
        lines.append("You have no teammates in this trial.")
    return "\n".join(lines) + "\n"


def compose_roster_prompt(
    entry: RosterEntry,
    artifact_root: Path,
    *,
    me: TeamMember,
    team: Sequence[TeamMember],
    channel_id: str,
    user_name: str,
    user_pubkey: str,
) -> str:
    """prompt, then persona, then skills, then the team block; hashes checked before reading.

    Raises `ArtifactHashMismatch` when a file no longer matches its pinned sha256.
    """
    text = read_artifact(artifact_root, entry.prompt).decode("utf-8")
    if entry.persona is not None:
        text += "\n" + read_artifact(artifact_root, entry.persona).decode("utf-8")
    for skill in entry.skills:
        title = PurePosixPath(skill.path).stem
        body = read_artifact(artifact_root, skill).decode("utf-8")
        text += f"\n## Skill: {title}\n\n{body}"
    if not text.endswith("\n"):
        text += "\n"
    teammates = [member for member in team if member.agent_id != me.agent_id]
    return text + "\n" + _team_block(me, teammates, channel_id, user_name, user_pubkey)
