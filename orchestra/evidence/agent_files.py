"""The files the agents wrote during the trial, as evidence entries (orchestrator.md §8.10)."""

from __future__ import annotations

from typing import TypedDict

#: characters of a file's text kept in the evidence
AGENT_FILE_CAP = 262_144
#: bytes worth reading for that many characters (a UTF-8 character is at most 4 bytes)
AGENT_FILE_READ_BYTES = 4 * AGENT_FILE_CAP


class AgentFile(TypedDict):
    agent_id: str
    path: str
    size: int
    content: str
    truncated: bool


def agent_file_entry(agent_id: str, path: str, data: bytes, size: int) -> AgentFile:
    """`data`: the file's first bytes (at least `AGENT_FILE_READ_BYTES` of them when it is
    longer); `size`: its whole length in bytes. Undecodable bytes become U+FFFD."""
    text = data.decode("utf-8", errors="replace")
    return {
        "agent_id": agent_id,
        "path": path,
        "size": size,
        "content": text[:AGENT_FILE_CAP],
        "truncated": len(text) > AGENT_FILE_CAP or size > len(data),
    }


def ordered_agent_files(files: list[AgentFile]) -> list[AgentFile]:
    """By agent, then path: the order of the evidence (§8.10)."""
    return sorted(files, key=lambda row: (row["agent_id"], row["path"]))
