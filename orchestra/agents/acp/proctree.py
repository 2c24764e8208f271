"""buzz-acp's agent processes: starting one, and ending what outlived the agents' trees
(agent-harness.md §1.8, §1.10).

An agent runs in its own process group, but its MCP servers and their shells start their
own groups too, so a plain group kill would orphan them: agents are ended as trees
(`orchestra.processes.stop_tree`). buzz-acp is a child subreaper (`become_subreaper`, cli.main),
so descendants whose parents died first re-parent to it and are still found afterwards.
"""

from __future__ import annotations

import asyncio
import os

from orchestra.processes import descendants, stop_pids

READ_LIMIT = 64 * 1024 * 1024  # the ACP pipe's line limit: prompts and results can be large


async def start_agent_process(
    command: str, args: tuple[str, ...] | list[str], cwd: str
) -> asyncio.subprocess.Process:
    """Start the agent in its own process group with buzz-acp's complete environment (§1.8).

    Kept free of the ACP SDK so that buzz-acp can start its agents before importing it: the
    agents' start-up then overlaps buzz-acp's own (two processes, two cores).
    """
    return await asyncio.create_subprocess_exec(
        command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None,
        env=dict(os.environ),
        cwd=cwd,
        start_new_session=True,
        limit=READ_LIMIT,
    )


async def end_orphans(grace_s: float = 2.0) -> None:
    """End whatever descendants of this process outlived their agent's tree."""
    pids = descendants(os.getpid())
    if pids:
        await stop_pids(pids, grace=grace_s)
