# Buzz Orchestra recipes. Every recipe runs inside the project's own virtual environment,
# created on first use, so a fresh machine needs only Python 3.11+ and `just`.
set shell := ["bash", "-euo", "pipefail", "-c"]

venv := ".venv"
bin := venv / "bin"

# Create .venv and install the project with its dev extra (skipped when pyproject.toml is unchanged).
setup:
    #!/usr/bin/env bash
    set -euo pipefail
    test -x {{bin}}/python || python3 -m venv {{venv}}
    stamp={{venv}}/.installed
    want=$(sha256sum pyproject.toml | cut -d' ' -f1)
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        {{bin}}/pip install --quiet --disable-pip-version-check -e '.[dev]'
        echo "$want" > "$stamp"
    fi

# Run the test suite (arguments go to pytest).
test *ARGS: setup
    {{bin}}/pytest {{ARGS}}

# Lint and check formatting.
lint: setup
    {{bin}}/ruff check .
    {{bin}}/ruff format --check .

# Format the code.
fmt: setup
    {{bin}}/ruff format .
    {{bin}}/ruff check --fix .

# Run the benchmark (arguments go to `orchestra benchmark`).
benchmark *ARGS: setup
    {{bin}}/orchestra benchmark {{ARGS}}

# Stop the benchmark stack (data is kept).
benchmark-down: setup
    {{bin}}/orchestra stack down
