"""`buzz-relay serve|migrate` (protocol.md §1.2)."""

import argparse
import asyncio
import contextlib
import logging
import resource
import signal
import sys
from collections.abc import Awaitable, Callable

import asyncpg

from orchestra.relay.config import ConfigError, RelayConfig, ignored_variables_set, load_config
from orchestra.relay.embedded_db import EmbeddedPostgres
from orchestra.relay.loop import new_event_loop
from orchestra.relay.memory import manual_full_collections
from orchestra.relay.server import DatabaseUnavailable, Relay, connect_pool
from orchestra.relay.storage.migrate import migrate

log = logging.getLogger("buzz.relay")

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="buzz-relay", description="Buzz-compatible Nostr relay.")
    commands = parser.add_subparsers(dest="command")
    for name, help_text in (
        ("serve", "run the relay (default)"),
        ("migrate", "apply the schema and exit"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("--database-url", help="PostgreSQL URL (overrides BUZZ_DATABASE_URL)")
        command.add_argument(
            "--embedded-db",
            metavar="DIR",
            help="start an embedded PostgreSQL (pgserver) with its data in DIR and stop it on exit",
        )
        if name == "serve":
            command.add_argument("--bind", help="host:port to listen on (overrides BUZZ_BIND_ADDR)")
            command.add_argument(
                "--public-urls",
                help="comma-separated relay URLs accepted in AUTH (overrides BUZZ_RELAY_PUBLIC_URLS)",
            )
    return parser


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if level.lower() != "debug":
        # websockets logs every HTTP request and connection at INFO (readiness polls included).
        logging.getLogger("websockets").setLevel(logging.WARNING)


async def _with_database(config: RelayConfig, work: Callable[[str], Awaitable[int]]) -> int:
    embedded = EmbeddedPostgres(config.embedded_db_dir) if config.embedded_db_dir else None
    try:
        url = await embedded.start() if embedded else config.database_url
        assert url is not None
        return await work(url)
    finally:
        if embedded is not None:
            await embedded.stop()


def _raise_open_file_limit() -> None:
    """Each connection is a file descriptor; allow as many as the hard limit permits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def _serve(config: RelayConfig, url: str) -> int:
    _raise_open_file_limit()
    relay = Relay(config, url)
    await relay.start()
    manual_full_collections()  # the process is the relay's alone
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        await relay.stop()
    return 0


async def _migrate(url: str) -> int:
    pool = await connect_pool(url)
    try:
        async with pool.acquire() as connection:
            before = await migrate(connection)
        log.info("schema migrated (was version %d)", before)
    finally:
        await pool.close()
    return 0


def main() -> None:
    argv = sys.argv[1:]
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["serve", *argv]  # plain `buzz-relay [flags]` means `serve`
    args = _parser().parse_args(argv)
    command = args.command
    try:
        config = load_config(
            bind=getattr(args, "bind", None),
            database_url=getattr(args, "database_url", None),
            public_urls=getattr(args, "public_urls", None),
            embedded_db_dir=getattr(args, "embedded_db", None),
        )
    except ConfigError as error:
        print(f"buzz-relay: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except ValueError as error:  # a value the configuration model refuses
        print(f"buzz-relay: {error}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    _setup_logging(config.log_level)
    ignored = ignored_variables_set()
    if ignored:
        log.info("ignoring settings with no meaning for this relay: %s", ", ".join(ignored))
    if command == "serve" and config.public_urls is None:
        log.warning("BUZZ_RELAY_PUBLIC_URLS is unset: AUTH accepts any ws:// or wss:// relay URL")
    work: Callable[[str], Awaitable[int]] = (
        (lambda url: _serve(config, url)) if command == "serve" else _migrate
    )
    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            code = runner.run(_with_database(config, work))
    except DatabaseUnavailable as error:
        print(f"buzz-relay: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except (OSError, asyncpg.PostgresError, RuntimeError) as error:
        print(f"buzz-relay: {error}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        code = 0
    with contextlib.suppress(Exception):
        logging.shutdown()
    sys.exit(code)
