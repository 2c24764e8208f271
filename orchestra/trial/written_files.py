"""The files the agents wrote: the workspace and home before launch, compared with after the
agents have stopped (orchestrator.md §8.10)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePath

from orchestra.evidence.agent_files import (
    AGENT_FILE_READ_BYTES,
    AgentFile,
    agent_file_entry,
    ordered_agent_files,
)
from orchestra.trial.env.protocol import TrialEnvironment

#: agent path -> SHA-256 of the file's bytes
Snapshot = dict[str, str]


def _regular_files(root: Path) -> Iterator[Path]:
    """Regular files under `root`; symlinks neither followed nor listed."""
    for directory, subdirectories, files in os.walk(root):
        base = Path(directory)
        subdirectories[:] = [name for name in subdirectories if not (base / name).is_symlink()]
        for name in files:
            path = base / name
            if path.is_file() and not path.is_symlink():
                yield path


def _digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


async def _host_trees(env: TrialEnvironment, work: Path) -> dict[PurePath, Path]:
    """The agents' workspace and home as host directories: the local env's own paths, the
    docker env's copied out under `work` (the harness's copy, no program in the container)."""
    paths = env.facts.paths
    trees: dict[PurePath, Path] = {}
    for index, location in enumerate((paths.workspace, paths.home)):
        if isinstance(location, Path):
            trees[location] = location
        else:
            copy = work / str(index)
            copy.mkdir()
            await env.get_tree(location, copy)
            trees[location] = copy
    return trees


def _files(trees: Mapping[PurePath, Path]) -> Iterator[tuple[str, Path]]:
    for location, host in trees.items():
        if host.is_dir():
            for path in _regular_files(host):
                yield str(location / path.relative_to(host)), path


async def snapshot(env: TrialEnvironment) -> Snapshot:
    """Every regular file of the workspace and home with its digest."""
    with tempfile.TemporaryDirectory(prefix="buzz-files-") as work:
        trees = await _host_trees(env, Path(work))
        return {agent_path: _digest(path) for agent_path, path in _files(trees)}


async def written_files(env: TrialEnvironment, before: Snapshot, agent_id: str) -> list[AgentFile]:
    """The files created or changed since `before`, as evidence rows of `agent_id` (the
    environment's agents share one workspace and home)."""
    rows: list[AgentFile] = []
    with tempfile.TemporaryDirectory(prefix="buzz-files-") as work:
        trees = await _host_trees(env, Path(work))
        for agent_path, path in _files(trees):
            if before.get(agent_path) == _digest(path):
                continue
            with path.open("rb") as handle:
                data = handle.read(AGENT_FILE_READ_BYTES)
            rows.append(agent_file_entry(agent_id, agent_path, data, path.stat().st_size))
    return ordered_agent_files(rows)
