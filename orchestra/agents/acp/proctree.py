"""buzz-acp's agent processes: starting one, and ending what outlived the agents' trees
(agent-harness.md §1.8, §1.10).

An agent runs in its own process group, but its MCP servers and their shells start their
own groups too, so a plain group kill would orphan them: agents are ended as trees
(`orchestra.processes.stop_tree`). buzz-acp is a child subreaper (`become_subreaper`, cli.main),
so descendants whose parents died first re-parent to it and are still found afterwards.

Where the local env's fork server serves the agent (a sandbox whose buzz-agent is the server's
client), buzz-acp asks the server for it itself (`forkserver.spawn`): no client process stays
between them, and the agent is its own pid.
"""

from __future__ import annotations

import asyncio
import os
from typing import Protocol

from orchestra.agents.forkserver.spawn import start_served
from orchestra.processes import Child, descendants, stop_pids

READ_LIMIT = 64 * 1024 * 1024  # the ACP pipe's line limit: prompts and results can be large


class AgentProcess(Child, Protocol):
    """What buzz-acp uses of an agent's process (beyond `Child`'s pid and wait):
    `asyncio.subprocess.Process`, or the fork server's `ForkedProcess`."""

    @property
    def returncode(self) -> int | None: ...
    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...
    @property
    def stdout(self) -> asyncio.StreamReader | None: ...
    def send_signal(self, signum: int, /) -> None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


async def start_agent_process(
    command: str, args: tuple[str, ...] | list[str], cwd: str
) -> AgentProcess:
    """Start the agent in its own process group with buzz-acp's complete environment (§1.8):
    forked by the fork server where one serves it, else as a subprocess.

    Kept free of the ACP SDK so that buzz-acp can start its agents before importing it: the
    agents' start-up then overlaps buzz-acp's own (two processes, two cores).
    """
    env = dict(os.environ)
    forked = await start_served(command, args, env=env, cwd=cwd, limit=READ_LIMIT)
    if forked is not None:
        return forked
    return await asyncio.create_subprocess_exec(
        command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None,
        env=env,
        cwd=cwd,
        start_new_session=True,
        limit=READ_LIMIT,
    )


async def end_orphans(grace_s: float = 2.0) -> None:
    """End whatever descendants of this process outlived their agent's tree."""
    pids = descendants(os.getpid())
    if pids:
        await stop_pids(pids, grace=grace_s)
