"""The stdio transport of buzz-agent's MCP servers: the SDK's `stdio_client`, or, for a server
the fork server serves (buzz-dev-mcp in a sandbox with a fork server), the same newline-delimited
JSON-RPC over the pipes of a program buzz-agent asked the fork server for itself
(`orchestra.agents.forkserver.spawn`: no client process stays between them).

The forked transport does what `mcp.client.stdio.stdio_client` does with its subprocess: one
task reads stdout into the session's stream line by line, one writes the session's messages to
stdin; at the end it closes stdin, gives the server `PROCESS_TERMINATION_TIMEOUT` to exit, then
TERMs its process group and KILLs what is left (the SDK's own tree termination and timeouts).
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import signal
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, cast

import anyio
import mcp_types
from mcp.client.stdio import (
    FORCE_KILL_TIMEOUT,
    PROCESS_TERMINATION_TIMEOUT,
    StdioServerParameters,
    get_default_environment,
    stdio_client,
)
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from orchestra.agents.forkserver.spawn import ForkedProcess, start_served

if TYPE_CHECKING:
    from anyio.abc import Process
    from mcp.client._transport import TransportStreams  # a type only: no private name at run time

log = logging.getLogger("mcp")
CHUNK_BYTES = 64 * 1024
#: the SDK's private timeouts of the same steps, as `stdio_client` has them in mcp 2.x
WRITER_FLUSH_SECONDS = 0.5  # the writer flushes what it accepted before stdin closes
KILL_REAP_SECONDS = 2.0  # the event loop sees the KILL (only an unkillable process waits it out)


@contextlib.asynccontextmanager
async def stdio_transport(params: StdioServerParameters) -> AsyncIterator[TransportStreams]:
    """`params`' server forked by the fork server where one serves it, else `stdio_client`'s."""
    env = get_default_environment() | (params.env or {})
    process = await start_served(
        params.command, params.args, env=env, cwd=params.cwd, stderr=sys.stderr.fileno()
    )
    if process is None:
        async with stdio_client(params) as streams:
            yield streams
        return
    async with forked_stdio(process, params.encoding, params.encoding_error_handler) as streams:
        yield streams


def _parse_line(line: str) -> SessionMessage | Exception:
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        log.exception("Failed to parse JSONRPC message from server")
        return exc
    return SessionMessage(message)


@contextlib.asynccontextmanager
async def forked_stdio(
    process: ForkedProcess, encoding: str = "utf-8", errors: str = "strict"
) -> AsyncIterator[TransportStreams]:
    """The session's streams over `process`' stdin and stdout; `process` is ended on exit."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    stdin, stdout = process.stdin, process.stdout

    async def drain() -> None:
        """Keep reading, so that a server flushing its output can still exit."""
        with contextlib.suppress(OSError):
            while await stdout.read(CHUNK_BYTES):
                pass

    async def stdout_reader() -> None:
        decoder = codecs.getincrementaldecoder(encoding)(errors)
        buffer = ""
        async with read_writer:
            try:
                while chunk := await stdout.read(CHUNK_BYTES):
                    lines = (buffer + decoder.decode(chunk)).split("\n")
                    buffer = lines.pop()
                    for line in lines:
                        try:
                            await read_writer.send(_parse_line(line))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            break  # the session is gone: only the drain below remains
                    else:
                        continue
                    break
            except OSError:
                log.exception("Reading from the MCP server's stdout failed mid-session")
        await drain()

    async def stdin_writer() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
                    json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write((json + "\n").encode(encoding, errors))
                    await stdin.drain()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # the server may still be alive: the session sees the connection end
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def exited_within(seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await process.wait()
        return process.returncode is not None

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(WRITER_FLUSH_SECONDS):
            await writer_done.wait()
        stdin.close()
        if not await exited_within(PROCESS_TERMINATION_TIMEOUT):
            # TERM to its group, KILL after FORCE_KILL_TIMEOUT (it reads `pid` and `returncode`)
            await terminate_posix_process_tree(cast("Process", process), FORCE_KILL_TIMEOUT)
            if not await exited_within(KILL_REAP_SECONDS):
                log.warning("MCP server process %d is still alive after the kill", process.pid)
                process.send_signal(signal.SIGKILL)
        for stream in (read_stream, write_stream, read_writer, write_reader):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(stdout_reader)
        tasks.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await shutdown()
            tasks.cancel_scope.cancel()
