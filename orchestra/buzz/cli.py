"""`buzz` console script: parse arguments, read stdin, call one client operation, print JSON.

Only argument parsing and output formatting live here; every operation is a `BuzzClient`
method. Heavy modules (websockets, crypto) are imported after parsing so `--help` is cheap.
"""

import contextlib
import json
import os
import sys
from typing import Any, BinaryIO, TextIO

from orchestra.buzz.cli_parser import DEFAULT_RELAY, GLOBAL_DESTS, build_parser
from orchestra.buzz.errors import BuzzError
from orchestra.startup import exit_now, pause_collector

_COMPACT_OPERATIONS = frozenset({"messages_get", "messages_thread"})


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def read_stdin_text(stream: BinaryIO) -> str:
    """buzz-cli.md §1 content rule: UTF-8, only trailing CR/LF removed."""
    try:
        text = stream.read().decode("utf-8")
    except UnicodeDecodeError:
        raise BuzzError("user_error", "content is not valid UTF-8") from None
    return text.rstrip("\r\n")


def _settings(args: dict[str, Any]) -> tuple[str, str, float]:
    secret = args["private_key"] or os.environ.get("BUZZ_PRIVATE_KEY")
    if not secret:
        raise BuzzError("key_error", "BUZZ_PRIVATE_KEY is not set")
    relay = args["relay"] or os.environ.get("BUZZ_RELAY_URL") or DEFAULT_RELAY
    timeout = args["timeout"]
    if timeout is None:
        env_timeout = os.environ.get("BUZZ_CLI_TIMEOUT", "30")
        try:
            timeout = float(env_timeout)
        except ValueError:
            raise BuzzError(
                "user_error", f"BUZZ_CLI_TIMEOUT must be a number, got {env_timeout!r}"
            ) from None
    if not timeout > 0:
        raise BuzzError("user_error", "--timeout must be a positive number of seconds")
    return relay, secret, timeout


async def _execute(
    relay: str, secret: str, wait_limit: float, operation: str, kwargs: dict[str, Any]
) -> tuple[Any, list[dict[str, str]]]:
    from orchestra.buzz.client import BuzzClient

    client = BuzzClient(relay, secret, timeout=wait_limit)
    try:
        result = await getattr(client, operation)(**kwargs)
    finally:
        await client.close()
    return result, client.warnings


def _format(result: Any, operation: str, output_format: str) -> Any:
    if output_format == "compact" and operation in _COMPACT_OPERATIONS:
        from orchestra.buzz.rows import compact_message

        return [compact_message(event) for event in result]
    return result


def _parse(argv: list[str], stdout: TextIO) -> dict[str, Any] | int:
    """The parsed arguments, or the exit code after `--help` / `--version` printed to stdout."""
    try:
        with contextlib.redirect_stdout(stdout):
            return vars(build_parser().parse_args(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0


def run(argv: list[str], stdin: BinaryIO, stdout: TextIO, stderr: TextIO) -> int:
    try:
        args = _parse(argv, stdout)
        if isinstance(args, int):
            return args
        relay, secret, timeout = _settings(args)
        operation, output_format = args.pop("operation"), args["format"]
        kwargs = {k: v for k, v in args.items() if k not in (*GLOBAL_DESTS, "group", "command")}
        for stdin_arg in ("content", "value"):
            if kwargs.get(stdin_arg) == "-":
                kwargs[stdin_arg] = read_stdin_text(stdin)
        import asyncio  # after parsing: `--help` and argument errors skip the event loop stack

        result, warnings = asyncio.run(_execute(relay, secret, timeout, operation, kwargs))
    except BuzzError as exc:
        stderr.write(_dumps(exc.to_json()) + "\n")
        return exc.exit_code
    except KeyboardInterrupt:
        stderr.write(_dumps(BuzzError("error", "interrupted").to_json()) + "\n")
        return 130
    except Exception as exc:  # a bug: still one JSON line, never a traceback
        message = str(exc) or type(exc).__name__
        stderr.write(_dumps(BuzzError("error", message).to_json()) + "\n")
        return 4
    for warning in warnings:
        stderr.write(_dumps(warning) + "\n")
    stdout.write(_dumps(_format(result, operation, output_format)) + "\n")
    return 0


def main() -> None:
    # One short operation: the cyclic collector would only traverse the imports' objects, and
    # interpreter finalization tears down modules nobody uses again; together about a quarter
    # of a call's CPU, paid 4-5 times per trial (docs/performance.md, "CPU cuts").
    pause_collector()
    exit_now(run(sys.argv[1:], sys.stdin.buffer, sys.stdout, sys.stderr))
