"""Docker-free parts of the docker stack and env: interpreter targets, wheelhouse digest,
`.env` and agent env files, tags. These run in every test run (no `docker` marker)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from orchestra.paths import PROJECT_ROOT, RepoPaths, StatePaths
from orchestra.stack.docker import (
    ENV_FILE_KEYS,
    compose_env_values,
    database_url,
    write_compose_env,
)
from orchestra.stack.images import base_image_of, repository_component
from orchestra.stack.readiness import StackError
from orchestra.stack.state import load_state
from orchestra.stack.wheelhouse import (
    INTERPRETER_PROBE,
    Interpreter,
    WheelhouseError,
    wheelhouse_digest,
)
from orchestra.trial.env.container import DockerEnvError, container_name, env_file_text

BOOKWORM = Interpreter(3, 11, "x86_64", "glibc", "2.36", True)


def test_probe_runs_on_this_interpreter_and_parses() -> None:
    output = subprocess.run(
        [sys.executable, "-c", INTERPRETER_PROBE], capture_output=True, text=True, check=True
    ).stdout
    found = Interpreter.from_probe(output)
    assert (found.major, found.minor) == sys.version_info[:2]
    assert found.has_venv
    assert found.target == f"cp{found.major}{found.minor}-{found.machine}-{found.libc}"


def test_bad_probe_output_is_a_one_line_error() -> None:
    with pytest.raises(WheelhouseError, match="unexpected interpreter probe output"):
        Interpreter.from_probe("sh: python3: not found")


def test_glibc_platforms_newest_first_with_legacy_aliases() -> None:
    platforms = BOOKWORM.pip_platforms()
    assert BOOKWORM.target == "cp311-x86_64-glibc"
    assert platforms[0] == "manylinux_2_36_x86_64"
    assert "manylinux_2_17_x86_64" in platforms and "manylinux_2_5_x86_64" in platforms
    assert "manylinux_2_37_x86_64" not in platforms
    assert platforms[-3:] == ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]


def test_musl_and_unknown_libc() -> None:
    alpine = Interpreter(3, 12, "aarch64", "musl", "1.2", True)
    assert alpine.pip_platforms() == [
        "musllinux_1_2_aarch64",
        "musllinux_1_1_aarch64",
        "musllinux_1_0_aarch64",
    ]
    with pytest.raises(WheelhouseError, match="unsupported C library unknown"):
        Interpreter(3, 11, "x86_64", "unknown", "", True).pip_platforms()


def test_wheelhouse_digest_is_over_sorted_name_and_hash_lines(tmp_path: Path) -> None:
    (tmp_path / "b-1.0-py3-none-any.whl").write_bytes(b"bee")
    (tmp_path / "a-1.0-py3-none-any.whl").write_bytes(b"ay")
    (tmp_path / "notes.txt").write_text("not a wheel")
    lines = "".join(
        f"{name} {hashlib.sha256(data).hexdigest()}\n"
        for name, data in (("a-1.0-py3-none-any.whl", b"ay"), ("b-1.0-py3-none-any.whl", b"bee"))
    )
    assert wheelhouse_digest(tmp_path) == hashlib.sha256(lines.encode()).hexdigest()
    (tmp_path / "b-1.0-py3-none-any.whl").write_bytes(b"changed")
    assert wheelhouse_digest(tmp_path) != hashlib.sha256(lines.encode()).hexdigest()


def test_compose_env_file_has_the_spec_keys_and_mode_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BUZZ_POSTGRES_IMAGE", raising=False)
    state = load_state(tmp_path / "state")
    values = compose_env_values(state, "buzz-orchestra/relay:0123456789ab")
    write_compose_env(state.paths, values)
    file = state.paths.compose_env
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    written = dict(line.split("=", 1) for line in file.read_text().splitlines())
    assert tuple(written) == ENV_FILE_KEYS
    assert written["BUZZ_POSTGRES_IMAGE"] == "postgres:16-bookworm"
    assert written["BUZZ_RELAY_PRIVATE_KEY"] == state.relay.secret_hex
    monkeypatch.setenv("BUZZ_POSTGRES_IMAGE", "buzz-orchestra/postgres:local")
    assert compose_env_values(state, "x")["BUZZ_POSTGRES_IMAGE"] == "buzz-orchestra/postgres:local"
    assert database_url(state) == f"postgresql://buzz:{state.postgres_password}@localhost:5633/buzz"


def test_compose_env_rejects_values_it_cannot_hold(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    with pytest.raises(StackError, match="BUZZ_RELAY_IMAGE"):
        write_compose_env(paths, {"BUZZ_RELAY_IMAGE": "a b"})
    assert not paths.compose_env.exists()


def test_agent_env_file_round_trips_through_sh(tmp_path: Path) -> None:
    env = {
        "PLAIN": "value",
        "TRICKY": 'it\'s $HOME `id` "q" \\ end',
        "MULTI": "line one\nline two",
        "EMPTY": "",
    }
    file = tmp_path / "agent.env"
    file.write_text(env_file_text(env))
    shown = subprocess.run(
        [
            "sh",
            "-c",
            f'set -a; . {file}; set +a; printf "%s\\0" "$PLAIN" "$TRICKY" "$MULTI" "$EMPTY"',
        ],
        capture_output=True,
        env={"PATH": os.environ["PATH"], "HOME": "/nowhere"},
        check=True,
    ).stdout.decode()
    assert shown.split("\0")[:4] == list(env.values())
    with pytest.raises(DockerEnvError, match="cannot be exported"):
        env_file_text({"BAD-NAME": "x"})


def test_names_and_tags() -> None:
    assert container_name("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0") == "bo-0f1e2d3c"
    assert repository_component("Reply_To.Thread") == "reply_to.thread"
    assert repository_component("My Task!") == "my-task"
    repo = RepoPaths(PROJECT_ROOT)
    assert base_image_of(repo.relay_dockerfile) == "python:3.12-slim-bookworm"
    assert "ARG BASE_IMAGE" in repo.agent_layer_dockerfile.read_text()
