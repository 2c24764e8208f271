"""`--stack`/`--env` resolution (orchestrator.md §5.1) with and without a Docker engine; no
engine is used: its availability is the variable under test."""

from __future__ import annotations

import pytest

from orchestra.stack import select
from orchestra.stack.select import ModeError, Modes, choose_modes

EXTERNAL = "ws://127.0.0.1:4000"


@pytest.fixture(params=[True, False], ids=["docker", "no-docker"])
def docker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(select, "docker_available", lambda: request.param)
    return bool(request.param)


def test_auto_picks_docker_exactly_when_the_engine_answers(docker: bool) -> None:
    expected = Modes("docker", "docker") if docker else Modes("embedded", "local")
    assert choose_modes("auto", "auto", None) == expected


@pytest.mark.parametrize(
    ("env", "stack"), [("local", "embedded"), ("docker", "docker")], ids=["local", "docker"]
)
def test_an_explicit_env_chooses_its_only_stack(docker: bool, env: str, stack: str) -> None:
    assert choose_modes("auto", env, None) == Modes(stack, env)


def test_external_stack_env_follows_the_engine(docker: bool) -> None:
    assert choose_modes("auto", "auto", EXTERNAL) == Modes(
        "external", "docker" if docker else "local"
    )
    assert choose_modes("external", "local", EXTERNAL) == Modes("external", "local")


@pytest.mark.parametrize(
    ("stack", "env", "message"),
    [
        ("embedded", "docker", "--stack embedded requires --env local"),
        ("docker", "local", "--stack docker requires --env docker"),
    ],
)
def test_unsupported_combinations_are_usage_errors(
    docker: bool, stack: str, env: str, message: str
) -> None:
    with pytest.raises(ModeError, match=message):
        choose_modes(stack, env, None)
