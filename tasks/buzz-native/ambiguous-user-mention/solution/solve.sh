#!/usr/bin/env bash
# Reference solution for buzz-native/ambiguous-user-mention; replayed by the built-in oracle model.
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
NAME = "Taylor Morgan Lee"
CODE = "Routing code ORCHID-72"


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


members = [row["pubkey"] for row in rows(buzz("channels", "members", "--channel", CHANNEL)) if row.get("pubkey")]
args = []
for pubkey in members[:200]:
    args += ["--pubkey", pubkey]
profiles = rows(buzz("users", "get", *args))
namesakes = [p for p in profiles if (p.get("display_name") or p.get("name")) == NAME]
matches = [p for p in namesakes if CODE in (p.get("about") or "")]
if len(matches) != 1:
    raise SystemExit(f"expected one {NAME} whose profile says {CODE!r}; found {len(matches)} of {len(namesakes)}")
print(matches[0]["pubkey"])
PY
)"
printf '@Taylor Morgan Lee ORCHID-72 approved\n' \
  | send_once delivery --reply-to "$BUZZ_REPLY_TO" --mention "$target"
printf '@%s Sent: ORCHID-72 approved was delivered to the Taylor Morgan Lee whose profile says Routing code ORCHID-72.\n' \
  "$BUZZ_REQUESTER_NAME" | reply callback

touch "$STATE_DIR/done"
