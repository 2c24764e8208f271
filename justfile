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

# Regression layer with reports and ONE decision against --baseline DIR or --baseline-history DB (the condition's last --history-runs N runs, default 30): a task that looks regressed is rerun to confirm it; exit 3 on a regression of the decision's family or a lost task (docs/statistics.md "The nightly decision"). With --baseline-history the run is added to DB afterwards.
[positional-arguments]
nightly *ARGS: setup
    #!/usr/bin/env bash
    set -euo pipefail
    baseline=""; history=""; runs=(); jobs_dir="jobs"; args=(); attempts=(--confirm-attempts 12)
    while [ $# -gt 0 ]; do case "$1" in
        --baseline) baseline="${2:?--baseline needs a run or job directory or report.json}"; shift 2 ;;
        --baseline=*) baseline="${1#*=}"; shift ;;
        --baseline-history) history="${2:?--baseline-history needs a results database}"; shift 2 ;;
        --baseline-history=*) history="${1#*=}"; shift ;;
        --history-runs) runs=(--history-runs "${2:?--history-runs needs N}"); shift 2 ;;
        --history-runs=*) runs=(--history-runs "${1#*=}"); shift ;;
        --confirm-attempts|--confirm-attempts=*) attempts=(); args+=("$1"); shift ;;
        --jobs-dir) jobs_dir="${2:?}"; args+=("$1" "$2"); shift 2 ;;
        --jobs-dir=*) jobs_dir="${1#*=}"; args+=("$1"); shift ;;
        *) args+=("$1"); shift ;;
    esac; done
    if [ -n "$baseline" ] && [ -n "$history" ]; then
        echo "error: just nightly takes --baseline or --baseline-history, not both" >&2; exit 1
    fi
    if [ -n "$history" ]; then
        against=(--baseline-history "$history" "${runs[@]}")
    elif [ -n "$baseline" ]; then
        against=(--confirm-against "$baseline")
        # Check the baseline before anything runs: compared with itself it is read exactly as
        # the comparison will read it, and a bad one stops here with compare's one-line error.
        {{bin}}/orchestra compare "$baseline" "$baseline" > /dev/null
    else
        echo "error: just nightly needs --baseline <run or job dir or report.json> or --baseline-history <results database>" >&2; exit 1
    fi
    run="nightly-$(date -u +%Y%m%dT%H%M%SZ)"; ran=0; compared=0
    # The run reruns a task that looks regressed (a bad baseline or database refuses it before
    # anything starts); its own confirmation lines are a preview: compare decides.
    {{bin}}/orchestra benchmark --layer regression --run-name "$run" --report \
        "${against[@]}" "${attempts[@]}" "${args[@]}" || ran=$?
    [ "$ran" -eq 0 ] || [ "$ran" -eq 3 ] || exit "$ran"
    out="$jobs_dir/$run/compare.md"
    # One decision: the suite test and the confirmed tasks in one family at α = 0.02.
    if [ -n "$history" ]; then sides=(--baseline-history "$history" "${runs[@]}" "$jobs_dir/$run");
    else sides=("$baseline" "$jobs_dir/$run"); fi
    {{bin}}/orchestra compare "${sides[@]}" --alpha 0.02 --format markdown > "$out.tmp" || compared=$?
    if [ "$compared" -ne 0 ] && [ "$compared" -ne 3 ]; then rm -f "$out.tmp"; exit "$compared"; fi
    mv "$out.tmp" "$out"
    echo "comparison: $out"
    if [ -n "$history" ]; then {{bin}}/orchestra db "$jobs_dir/$run" -o "$history" > /dev/null; fi
    # the decision last, naming the tasks that fail the night
    {{bin}}/orchestra compare "${sides[@]}" --alpha 0.02 || true
    exit "$compared"
