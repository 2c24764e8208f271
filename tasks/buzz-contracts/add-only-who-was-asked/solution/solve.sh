#!/usr/bin/env bash
# Reference solution for buzz-contracts/add-only-who-was-asked; replayed by the built-in oracle model.
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

# Create the channel and add exactly the person asked for: Hana, not Tomas (he is only
# mentioned), and nobody in the request's channel.
python3 - <<'PY'
import json
import subprocess


def buzz(*args):
    out = subprocess.run(["buzz", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else None


existing = [
    row for row in buzz("channels", "search", "--query", "q3-invoice-review", "--exact")
    if not row.get("archived")
]
if existing:
    channel_id = existing[0]["channel_id"]
else:
    channel_id = buzz("channels", "create", "--name", "q3-invoice-review",
                      "--visibility", "private")["channel_id"]
matches = [p for p in buzz("users", "get", "--name", "Hana Okafor Reyes")
           if (p.get("display_name") or p.get("name")) == "Hana Okafor Reyes"]
if len(matches) != 1:
    raise SystemExit(f"expected exactly one profile named Hana Okafor Reyes, found {len(matches)}")
present = {row["pubkey"] for row in buzz("channels", "members", "--channel", channel_id)}
if matches[0]["pubkey"] not in present:
    buzz("channels", "add-member", "--channel", channel_id, "--pubkey", matches[0]["pubkey"])
PY
printf '@%s The private channel q3-invoice-review is ready and Hana Okafor Reyes is in it. Tomas Berg Lindqvist is not added yet.\n' \
  "$BUZZ_REQUESTER_NAME" | reply answer

touch "$STATE_DIR/done"
