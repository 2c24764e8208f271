"""The `buzz` console script: parsing, help, exit codes and error JSON (buzz-cli.md §1, §3, §11)."""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestra.buzz.cli_parser import build_parser, parse_arguments
from orchestra.nostr.keys import Keys

from .conftest import run_cli

BUZZ = str(Path(sys.executable).parent / "buzz")
KEY = Keys.generate()
CHANNEL = "0b8f5c1e-7d2a-4f3b-9c6e-2a1d4e5f6a7b"


def run_script(argv: list[str], env: dict[str, str] | None = None, stdin: bytes = b""):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BUZZ_")}
    return subprocess.run(
        [BUZZ, *argv], input=stdin, capture_output=True, env={**clean, **(env or {})}, timeout=60
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["messages", "--help"],
        ["messages", "send", "--help"],
        ["channels", "add-member", "--help"],
        ["users", "get", "-h"],
        ["mem", "set", "--help"],
    ],
)
def test_help_is_plain_text_exit_0(argv):
    result = run_cli(argv)
    assert result.code == 0
    assert result.stdout.startswith("usage: buzz")


def test_console_script_help_and_version():
    help_result = run_script(["--help"])
    assert help_result.returncode == 0 and b"messages" in help_result.stdout
    version = run_script(["--version"])
    assert (version.returncode, version.stdout) == (0, b"buzz 0.1.0\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["frobnicate"],
        ["messages", "edit"],
        ["messages", "send", "--channel", CHANNEL, "--content", "x", "--file", "a"],
        ["messages", "send", "--channel", CHANNEL],
        ["messages", "get", "--channel", CHANNEL, "--limit", "many"],
        ["messages", "get", "--channel", CHANNEL, "--kinds", "9,x"],
        ["channels", "search"],
        ["messages", "get", "--channel", CHANNEL, "--format", "yaml"],
        ["mem", "patch", "x"],
        [],
    ],
)
def test_argument_errors_are_json_user_errors(argv):
    result = run_cli(["--private-key", KEY.secret_hex, *argv])
    assert result.code == 1 and result.stdout == ""
    error = json.loads(result.stderr)
    assert (error["error"], error["retryable"]) == ("user_error", False)
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bogus"], "buzz: unrecognized arguments: --bogus"),
        (["channels", "--bogus"], "buzz: unrecognized arguments: --bogus"),
        (
            ["channels", "search", "--query", "x", "--bogus"],
            "buzz: unrecognized arguments: --bogus",
        ),
        (["channels"], "buzz channels: a command is required"),
        ([], "buzz: a group is required"),
    ],
)
def test_unknown_options_are_named_before_a_missing_group_or_command(argv, message):
    result = run_cli(argv)
    assert result.code == 1
    assert json.loads(result.stderr)["message"].startswith(message)


def test_global_options_are_accepted_anywhere_on_the_line():
    argv = ["channels", "search", "--query", "x", "--format", "compact", "--timeout", "5"]
    args = parse_arguments([*argv, "--relay", "ws://r", "--private-key", "k"])
    assert (args["format"], args["timeout"], args["relay"], args["private_key"]) == (
        "compact",
        5.0,
        "ws://r",
        "k",
    )
    assert parse_arguments(["--format", "compact", "mem", "ls"])["format"] == "compact"
    assert parse_arguments(["mem", "--format", "compact", "ls"])["format"] == "compact"
    assert parse_arguments(["mem", "ls"])["format"] == "json"  # the default survives


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def test_every_option_and_argument_has_help():
    undocumented = [
        f"{parser.prog} {action.option_strings or action.dest}"
        for parser in _parsers(build_parser())
        for action in parser._actions
        if not action.help and not isinstance(action, argparse._SubParsersAction)
    ]
    assert undocumented == []


def test_a_bad_private_key_flag_is_reported_as_the_flag(monkeypatch):
    monkeypatch.setenv("BUZZ_PRIVATE_KEY", KEY.secret_hex)  # a good one: the flag still wins
    result = run_cli(["--private-key", "f" * 63, "mem", "ls"])
    assert result.code == 3
    assert json.loads(result.stderr)["message"] == (
        "--private-key is not a valid hex or nsec secret key"
    )
    assert "f" * 63 not in result.stderr


def test_a_closed_stdout_exits_quietly(relay_url):
    env = {"BUZZ_RELAY_URL": relay_url, "BUZZ_PRIVATE_KEY": KEY.nsec}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BUZZ_")}
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written, as with `| head -c 0`
    try:
        done = subprocess.run(
            [BUZZ, "channels", "create", "--name", "closed-pipe"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env={**clean, **env},
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, b"")
    found = run_script(["channels", "search", "--query", "closed-pipe", "--exact"], env=env)
    assert len(json.loads(found.stdout)) == 1  # the command did its work all the same


def test_local_validation_happens_before_connecting():
    # The relay URL points nowhere: a local refusal must not wait for the network.
    argv = ["--relay", "ws://127.0.0.1:9", "--private-key", KEY.secret_hex]
    for command, message in (
        (
            ["messages", "get", "--channel", CHANNEL, "--limit", "0"],
            "--limit must be an integer between 1 and 10000",
        ),
        (
            ["messages", "send", "--channel", "nope", "--content", "x"],
            "invalid channel 'nope': expected a UUID",
        ),
        (["mem", "set", "core", ""], "memory value is empty"),
        (["users", "get", "--pubkey", "zz"], "invalid --pubkey"),
    ):
        result = run_cli([*argv, *command])
        assert result.code == 1, command
        assert json.loads(result.stderr)["message"].startswith(message), result.stderr


def test_missing_and_malformed_keys_never_echo_the_key():
    missing = run_script(["mem", "ls"])
    assert missing.returncode == 3
    assert json.loads(missing.stderr) == {
        "error": "key_error",
        "message": "BUZZ_PRIVATE_KEY is not set",
        "retryable": False,
    }
    secretish = "f" * 63
    bad = run_script(["mem", "ls"], env={"BUZZ_PRIVATE_KEY": secretish})
    assert bad.returncode == 3
    assert (
        json.loads(bad.stderr)["message"]
        == "BUZZ_PRIVATE_KEY is not a valid hex or nsec secret key"
    )
    assert secretish.encode() not in bad.stderr


def test_unreachable_relay_is_a_retryable_network_error_after_two_retries():
    started = time.monotonic()
    result = run_cli(["--relay", "http://127.0.0.1:9", "--private-key", KEY.nsec, "mem", "ls"])
    elapsed = time.monotonic() - started
    assert result.code == 2 and result.stdout == ""
    error = json.loads(result.stderr)
    assert (error["error"], error["retryable"]) == ("network_error", True)
    assert error["message"].startswith("cannot connect to relay ws://127.0.0.1:9/")
    assert 1.5 <= elapsed < 10
    assert KEY.nsec not in result.stderr and KEY.secret_hex not in result.stderr


def test_invalid_relay_url_is_a_user_error():
    result = run_cli(["--relay", "ftp://example.org", "--private-key", KEY.secret_hex, "mem", "ls"])
    assert result.code == 1
    assert "invalid relay URL" in json.loads(result.stderr)["message"]


def test_unexpected_exceptions_become_exit_4(monkeypatch):
    from orchestra.buzz.client import BuzzClient

    async def broken(self, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(BuzzClient, "mem_ls", broken)
    result = run_cli(["--relay", "ws://127.0.0.1:9", "--private-key", KEY.secret_hex, "mem", "ls"])
    assert result.code == 4
    assert json.loads(result.stderr) == {"error": "error", "message": "boom", "retryable": False}


def test_console_script_end_to_end_with_environment(relay_url):
    env = {
        "BUZZ_RELAY_URL": relay_url.replace("ws://", "http://"),
        "BUZZ_PRIVATE_KEY": KEY.nsec,
        "BUZZ_AUTH_TAG": '["auth","00","","00"]',  # accepted and ignored
        "BUZZ_CLI_TIMEOUT": "15",
    }
    created = run_script(["channels", "create", "--name", "script"], env=env)
    assert created.returncode == 0, created.stderr
    channel = json.loads(created.stdout)["channel_id"]
    text = "first line\n\n  indented — ünïcode\n"
    sent = run_script(
        ["messages", "send", "--channel", channel, "--content", "-"], env=env, stdin=text.encode()
    )
    assert sent.returncode == 0, sent.stderr
    assert sent.stderr == b""
    got = run_script(["--format", "compact", "messages", "get", "--channel", channel], env=env)
    assert [m["content"] for m in json.loads(got.stdout)] == [text.rstrip("\n")]
    assert "ünïcode".encode() in got.stdout  # ensure_ascii=False


def test_flags_win_over_environment_and_bad_timeouts_are_user_errors(monkeypatch):
    monkeypatch.setenv("BUZZ_PRIVATE_KEY", "not a key")
    monkeypatch.setenv("BUZZ_RELAY_URL", "ftp://nowhere")
    result = run_cli(
        [
            "--private-key",
            KEY.secret_hex,
            "--relay",
            "ws://127.0.0.1:9",
            "--timeout",
            "0",
            "mem",
            "ls",
        ]
    )
    assert (result.code, json.loads(result.stderr)["message"]) == (
        1,
        "--timeout must be a positive number of seconds",
    )
    monkeypatch.setenv("BUZZ_CLI_TIMEOUT", "soon")
    result = run_cli(["--private-key", KEY.secret_hex, "--relay", "ws://127.0.0.1:9", "mem", "ls"])
    assert json.loads(result.stderr)["message"] == "BUZZ_CLI_TIMEOUT must be a number, got 'soon'"
