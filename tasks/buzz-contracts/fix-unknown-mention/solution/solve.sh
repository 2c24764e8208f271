#!/usr/bin/env bash
# Reference solution for buzz-contracts/fix-unknown-mention; replayed by the built-in oracle model.
set -euo pipefail

: "${BUZZ_CHANNEL_ID:?BUZZ_CHANNEL_ID is required}"
: "${BUZZ_REPLY_TO:?BUZZ_REPLY_TO is required}"
: "${BUZZ_REQUESTER_PUBKEY:?BUZZ_REQUESTER_PUBKEY is required}"
: "${BUZZ_REQUESTER_NAME:?BUZZ_REQUESTER_NAME is required}"

STATE_DIR="${TMPDIR:-/tmp}/buzz-solve-${BUZZ_CHANNEL_ID}"
mkdir -p "$STATE_DIR"

# send_once STEP [messages-send options...]: publish stdin at most once per STEP.
send_once() {
  local step="$1"; shift
  if [ -e "$STATE_DIR/$step.sent" ]; then
    cat >/dev/null
    return 0
  fi
  buzz messages send --channel "$BUZZ_CHANNEL_ID" --content - "$@" >"$STATE_DIR/$step.json"
  touch "$STATE_DIR/$step.sent"
}

# reply STEP: a thread reply to the task that p-tags the requester.
reply() {
  local step="$1"; shift
  send_once "$step" --reply-to "$BUZZ_REPLY_TO" --mention "$BUZZ_REQUESTER_PUBKEY" "$@"
}

target="$(python3 - <<'PY'
import json
import os
import subprocess

CHANNEL = os.environ["BUZZ_CHANNEL_ID"]


def buzz(*args):
    out = subprocess.run(["buzz", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else None


def rows(value):
    if isinstance(value, dict):
        for key in ("members", "users", "profiles", "results", "items"):
            if isinstance(value.get(key), list):
                return value[key]
        return [value]
    return value if isinstance(value, list) else []


# `@Robbie` names nobody (the CLI refuses it): find the member whose profile says so.
members = [row["pubkey"] for row in rows(buzz("channels", "members", "--channel", CHANNEL)) if row.get("pubkey")]
args = []
for pubkey in members[:200]:
    args += ["--pubkey", pubkey]
matches = [p for p in rows(buzz("users", "get", *args)) if "goes by robbie" in (p.get("about") or "").lower()]
if len(matches) != 1:
    raise SystemExit(f"expected one member who goes by Robbie; found {len(matches)}")
print(matches[0]["pubkey"], matches[0].get("display_name") or matches[0].get("name"))
PY
)"
pubkey="${target%% *}"
name="${target#* }"
printf '@%s could you confirm the refund for order 7731?\n' "$name" \
  | send_once delivery --reply-to "$BUZZ_REPLY_TO" --mention "$pubkey"
printf '@%s I asked %s (Robbie) to confirm the refund for order 7731.\n' "$BUZZ_REQUESTER_NAME" "$name" \
  | reply callback

touch "$STATE_DIR/done"
