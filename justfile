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

# Run the test suite (arguments go to pytest unchanged).
[positional-arguments]
test *ARGS: setup
    {{bin}}/pytest "$@"

# Lint, check formatting and type-check (mypy, configured in pyproject.toml).
lint: setup
    {{bin}}/ruff check .
    {{bin}}/ruff format --check .
    {{bin}}/mypy

# The calibration study of compare's suite test, the intervals and the leaderboard (its output is in docs/statistics.md).
calibrate: setup
    {{bin}}/python bench/calibration.py

# Format the code.
fmt: setup
    {{bin}}/ruff format .
    {{bin}}/ruff check --fix .

# Run the benchmark (arguments go to `orchestra benchmark` unchanged).
[positional-arguments]
benchmark *ARGS: setup
    {{bin}}/orchestra benchmark "$@"

# Stop the benchmark stack (data is kept).
benchmark-down: setup
    {{bin}}/orchestra stack down

# Regression layer with reports, compared against --baseline DIR as it goes (a regressed task is rerun to confirm it; exit 3 on a confirmed or significant regression or a missing task).
[positional-arguments]
nightly *ARGS: setup
    #!/usr/bin/env bash
    set -euo pipefail
    baseline=""; jobs_dir="jobs"; args=()
    while [ $# -gt 0 ]; do case "$1" in
        --baseline) baseline="${2:?--baseline needs a run or job directory or report.json}"; shift 2 ;;
        --baseline=*) baseline="${1#*=}"; shift ;;
        --jobs-dir) jobs_dir="${2:?}"; args+=("$1" "$2"); shift 2 ;;
        --jobs-dir=*) jobs_dir="${1#*=}"; args+=("$1"); shift ;;
        *) args+=("$1"); shift ;;
    esac; done
    [ -n "$baseline" ] || { echo "error: just nightly needs --baseline <run or job dir or report.json>" >&2; exit 1; }
    # Check the baseline before anything runs: compared with itself it is read exactly as the
    # comparison will read it, and a bad one stops here with compare's one-line error.
    {{bin}}/orchestra compare "$baseline" "$baseline" > /dev/null
    run="nightly-$(date -u +%Y%m%dT%H%M%SZ)"; ran=0; compared=0; log="$(mktemp)"
    trap 'rm -f "$log"' EXIT
    # A task that regresses against the baseline is rerun until its verdict is in (issue 29):
    # exit 3 on a confirmed regression, 0 when the flip was noise.
    {{bin}}/orchestra benchmark --layer regression --run-name "$run" --report \
        --confirm-against "$baseline" "${args[@]}" | tee "$log" || ran=$?
    [ "$ran" -eq 0 ] || [ "$ran" -eq 3 ] || exit "$ran"
    out="$jobs_dir/$run/compare.md"
    {{bin}}/orchestra compare "$baseline" "$jobs_dir/$run" --format markdown > "$out.tmp" || compared=$?
    if [ "$compared" -ne 0 ] && [ "$compared" -ne 3 ]; then rm -f "$out.tmp"; exit "$compared"; fi
    mv "$out.tmp" "$out"
    cat "$out"
    # the confirmation verdicts last: what decided the nightly
    grep -E '^(confirmed regression|not confirmed|unconfirmed|no task regressed)' "$log" || true
    [ "$ran" -ne 0 ] || exit "$compared"
    exit "$ran"
