#!/usr/bin/env bash
# Reference solution for buzz-native/create-channel-invite-users; replayed by the built-in oracle model.
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

python3 - <<'PY'
import json
import subprocess

CHANNEL = "fix-pr-1234"
WANTED = [(name, "member") for name in ("benchmark-user-07", "benchmark-user-19", "benchmark-user-42")]
WANTED += [(name, "bot") for name in ("benchmark-bot-03", "benchmark-bot-08")]


def buzz(*args):
    out = subprocess.run(["buzz", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else None


def rows(value):
    if isinstance(value, dict):
        for key in ("channels", "members", "users", "profiles", "results", "items"):
            if isinstance(value.get(key), list):
                return value[key]
        return [value]
    return value if isinstance(value, list) else []


def display_name(profile):
    return profile.get("display_name") or profile.get("name")


existing = [
    row for row in rows(buzz("channels", "search", "--query", CHANNEL, "--exact"))
    if row.get("name") == CHANNEL and not row.get("archived")
]
if existing:
    channel_id = existing[0]["channel_id"]
else:
    created = buzz("channels", "create", "--name", CHANNEL, "--type", "stream",
                   "--visibility", "private", "--ttl", "3600")
    channel_id = created["channel_id"]

present = {row.get("pubkey") for row in rows(buzz("channels", "members", "--channel", channel_id))}
for name, role in WANTED:
    matches = [p for p in rows(buzz("users", "get", "--name", name)) if display_name(p) == name]
    if len(matches) != 1:
        raise SystemExit(f"expected exactly one profile named {name}, found {len(matches)}")
    if matches[0]["pubkey"] not in present:
        buzz("channels", "add-member", "--channel", channel_id,
             "--pubkey", matches[0]["pubkey"], "--role", role)
PY
printf '@%s Created the private stream channel fix-pr-1234 with a one-hour TTL. Members: benchmark-user-07, benchmark-user-19, benchmark-user-42. Bots: benchmark-bot-03, benchmark-bot-08.\n' \
  "$BUZZ_REQUESTER_NAME" | reply answer

touch "$STATE_DIR/done"
