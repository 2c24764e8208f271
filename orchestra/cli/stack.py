"""`orchestra stack up|down|status` (orchestrator.md §2.6, §5)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from orchestra.cli.errors import EXIT_PREFLIGHT, fail
from orchestra.paths import DEFAULT_STATE_DIR, StatePaths
from orchestra.stack.docker import DockerStack, docker_stack_services, stop_docker_stack
from orchestra.stack.embedded import (
    DEFAULT_RELAY_PORT,
    EmbeddedStack,
    relay_urls,
    running_relay_pid,
    stop_embedded,
)
from orchestra.stack.readiness import StackError, probe_relay
from orchestra.stack.select import (
    ModeError,
    choose_modes,
    compose_project,
    docker_available,
    running_stack,
)
from orchestra.stack.state import StateError, load_state

stack_app = typer.Typer(help="Bring the benchmark stack up, down, or show its status.")

StateDir = Annotated[Path, typer.Option("--state-dir")]
RelayPort = Annotated[int, typer.Option("--relay-port", min=1, max=65535)]


@stack_app.command("up")
def stack_up(
    stack: Annotated[str, typer.Option("--stack")] = "auto",
    fresh: Annotated[bool, typer.Option("--fresh")] = False,
    relay_url: Annotated[str | None, typer.Option("--relay-url")] = None,
    database_url: Annotated[str | None, typer.Option("--database-url")] = None,
    relay_port: RelayPort = DEFAULT_RELAY_PORT,
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Bring the stack up and wait for readiness; it keeps running afterwards."""
    try:
        modes = choose_modes(stack, "auto", relay_url)
    except ModeError as error:
        fail(str(error))
    if fresh and modes.stack != "docker":
        typer.echo("note: --fresh applies to the Docker stack only; ignored")
    try:
        state = load_state(state_dir)
    except StateError as error:
        fail(str(error), EXIT_PREFLIGHT)

    async def bring_up() -> None:
        async with running_stack(
            modes,
            state,
            relay_port=relay_port,
            relay_url=relay_url,
            database_url=database_url,
            keep_running=True,
            fresh=fresh,
        ) as stack:
            typer.echo(f"stack {stack.info.mode} ready: relay {stack.info.relay_ws_url}")

    try:
        asyncio.run(bring_up())
    except StackError as error:
        fail(str(error), EXIT_PREFLIGHT)


@stack_app.command("down")
def stack_down(
    volumes: Annotated[bool, typer.Option("--volumes")] = False,
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Stop the stack of this state dir: the embedded relay and PostgreSQL, and the Docker
    compose project when one was brought up from here. Data is kept unless --volumes."""
    try:
        state = load_state(state_dir, create=False)
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


def _docker_stack_configured(paths: StatePaths) -> bool:
    """A docker stack was brought up from this state dir (it wrote `.env`) and Docker answers."""
    return paths.compose_env.exists() and docker_available()


def _docker_services(paths: StatePaths) -> dict[str, str]:
    try:
        return asyncio.run(docker_stack_services(paths, project=compose_project()))
    except StackError:
        return {}


@stack_app.command("status")
def stack_status(
    relay_port: RelayPort = DEFAULT_RELAY_PORT,
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Print mode, URLs, readiness and the pinned user's pubkey."""
    try:
        state = load_state(state_dir, create=False)
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
        ws_url, agent_url = relay_urls(relay_port)
        http_url = EmbeddedStack(state, relay_port).http_url
    ready = asyncio.run(probe_relay(http_url))
    typer.echo(f"relay: {ws_url} (agents: {agent_url})")
    typer.echo(f"readiness: {http_url}/_readiness -> {'ready' if ready else 'not ready'}")
    typer.echo(f"state dir: {state.paths.root}")
    typer.echo(f"user pubkey: {state.user.pubkey}")
    typer.echo(f"user npub: {state.user.npub}")
