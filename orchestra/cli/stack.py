"""`orchestra stack up|down|status` (orchestrator.md §2.6, §5)."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from orchestra.cli.errors import EXIT_PREFLIGHT, fail
from orchestra.cli.help import Command, Group, epilog
from orchestra.cli.options import with_options
from orchestra.documents.enums import StackMode
from orchestra.documents.run_config import AUTO, RunConfig
from orchestra.paths import StatePaths
from orchestra.stack.docker import DockerStack, docker_stack_services, stop_docker_stack
from orchestra.stack.embedded import (
    EmbeddedStack,
    relay_urls,
    running_relay_pid,
    stop_embedded,
)
from orchestra.stack.readiness import StackError, probe_relay
from orchestra.stack.select import (
    ModeError,
    check_docker,
    choose_modes,
    compose_project,
    docker_available,
    running_stack,
)
from orchestra.stack.state import StateError, load_state

stack_app = typer.Typer(
    help="Bring the benchmark stack (the relay and its database) up, down, or show its status.",
    cls=Group,
    rich_markup_mode=None,
    no_args_is_help=True,
)

_STACK_CODES = (
    ("0", "done"),
    ("1", "usage error, or no stack state in the state dir (status)"),
    ("2", "the stack could not be brought up or stopped"),
)


@stack_app.command(
    "up",
    cls=Command,
    short_help="Bring the stack up, wait until it is ready, leave it running.",
    epilog=epilog(
        (
            ("orchestra stack up --stack embedded --relay-port 3601", "no Docker needed"),
            ("orchestra stack up --stack docker --fresh", "compose stack, empty database"),
        ),
        _STACK_CODES,
    ),
)
@with_options(["stack", "fresh", "relay_url", "database_url", "relay_port", "state_dir"])
def stack_up(**options: Any) -> None:
    """Bring the stack up and wait for readiness; it keeps running afterwards.

    `orchestra stack status` then prints its relay URL and the pinned user's key, which is
    what `buzz` needs to look around the relay.
    """
    config = RunConfig().updated(options)
    try:
        modes = choose_modes(config.stack, AUTO, config.relay_url)
        check_docker(modes)
    except ModeError as error:
        fail(str(error))
    except StackError as error:
        fail(str(error), EXIT_PREFLIGHT)
    if config.fresh and modes.stack is not StackMode.DOCKER:
        typer.echo("note: --fresh applies to the Docker stack only; ignored")
    try:
        state = load_state(config.state_dir)
    except StateError as error:
        fail(str(error), EXIT_PREFLIGHT)

    async def bring_up() -> None:
        async with running_stack(
            modes,
            state,
            relay_port=config.relay_port,
            relay_url=config.relay_url,
            database_url=config.database_url,
            keep_running=True,
            fresh=config.fresh,
        ) as stack:
            typer.echo(f"stack {stack.info.mode} ready: relay {stack.info.relay_ws_url}")

    try:
        asyncio.run(bring_up())
    except StackError as error:
        fail(str(error), EXIT_PREFLIGHT)


@stack_app.command(
    "down",
    cls=Command,
    short_help="Stop the stack of this state dir (data is kept).",
    epilog=epilog(
        (
            ("orchestra stack down", "stop the stack of .benchmark, keep its data"),
            ("orchestra stack down --volumes", "stop it and delete its database"),
        ),
        _STACK_CODES,
    ),
)
@with_options(["state_dir"])
def stack_down(
    volumes: Annotated[
        bool,
        typer.Option(
            "--volumes", help="Also delete the database (Docker volumes or the embedded data)."
        ),
    ] = False,
    **options: Any,
) -> None:
    """Stop the stack of this state dir: the embedded relay and PostgreSQL, and the Docker
    compose project when one was brought up from here. Data is kept unless --volumes."""
    try:
        state = load_state(options["state_dir"], create=False)
    except StateError:
        typer.echo("no stack state here; nothing to stop")
        return
    done = asyncio.run(stop_embedded(state, remove_data=volumes))
    if _docker_stack_configured(state.paths):
        try:
            done += asyncio.run(
                stop_docker_stack(state.paths, volumes=volumes, project=compose_project())
            )
        except StackError as error:
            fail(str(error), EXIT_PREFLIGHT)
    typer.echo("\n".join(done) if done else "no stack was running")


def _docker_stack_configured(state_paths: StatePaths) -> bool:
    """A docker stack was brought up from this state dir (it wrote `.env`) and Docker answers."""
    return state_paths.compose_env.exists() and docker_available()


def _docker_services(state_paths: StatePaths) -> dict[str, str]:
    try:
        return asyncio.run(docker_stack_services(state_paths, project=compose_project()))
    except StackError:
        return {}


@stack_app.command(
    "status",
    cls=Command,
    short_help="Mode, relay URLs, readiness, the pinned user and how to point buzz at it.",
    epilog=epilog(
        (
            ("orchestra stack status", "the stack of .benchmark"),
            ("orchestra stack status --relay-port 3601", "an embedded stack on another port"),
        ),
        _STACK_CODES,
    ),
)
@with_options(["relay_port", "state_dir"])
def stack_status(**options: Any) -> None:
    """Print the stack's mode, relay URLs, readiness and the pinned user's key files."""
    try:
        state = load_state(options["state_dir"], create=False)
    except StateError as error:
        fail(str(error))
    pid = running_relay_pid(state.paths)
    if pid is None and _docker_stack_configured(state.paths):
        info = DockerStack(state, project=compose_project()).info
        services = _docker_services(state.paths)
        listed = ", ".join(f"{name} {status}" for name, status in sorted(services.items()))
        typer.echo(f"mode: docker (compose project {compose_project()}: {listed or 'not running'})")
        ws_url, agent_url, http_url = info.relay_ws_url, info.agent_relay_url, info.relay_http_url
    else:
        typer.echo(f"mode: embedded ({f'relay pid {pid}' if pid else 'not running'})")
        port = options["relay_port"]
        ws_url, agent_url = relay_urls(port)
        http_url = EmbeddedStack(state, port).http_url
    ready = asyncio.run(probe_relay(http_url))
    typer.echo(f"relay: {ws_url} (agents: {agent_url})")
    typer.echo(f"readiness: {http_url}/_readiness -> {'ready' if ready else 'not ready'}")
    typer.echo(f"state dir: {state.paths.root}")
    typer.echo(f"user pubkey: {state.user.pubkey}")
    typer.echo(f"user npub: {state.user.npub}")
    typer.echo(f"buzz as the user: {buzz_environment(ws_url, state.paths.state_json)}")


def buzz_environment(ws_url: str, state_json: Path) -> str:
    """The shell line that points `buzz` at the relay as the pinned user; it reads the secret
    key from `state.json` when run, so the key itself is never printed (§5.2)."""
    reader = "import json, sys; print(json.load(open(sys.argv[1]))['user_secret_key'])"
    key = f'$(python3 -c "{reader}" {shlex.quote(str(state_json))})'
    return f'export BUZZ_RELAY_URL={ws_url} BUZZ_PRIVATE_KEY="{key}"'
