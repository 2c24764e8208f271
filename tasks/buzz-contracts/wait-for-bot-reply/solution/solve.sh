#!/usr/bin/env bash
# Reference solution for buzz-contracts/wait-for-bot-reply; replayed by the built-in oracle model.
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

# The bot's reply never wakes the agent: poll the request's thread until it is there.
result=""
for _ in $(seq 1 60); do
  result="$(buzz messages thread --channel "$BUZZ_CHANNEL_ID" --event "$BUZZ_REPLY_TO" | python3 -c '
import json, re, sys
for event in json.load(sys.stdin):
    match = re.search(r"Nightly build (\d+) finished: ([\d,]+) tests passed, (\d+) failed", event["content"])
    if match:
        print(f"build {match.group(1)}: {match.group(3)} tests failed ({match.group(2)} passed), as Build Bot reported.")
        break
')"
  [ -n "$result" ] && break
  sleep 1
done
[ -n "$result" ] || { echo "Build Bot never replied" >&2; exit 1; }
printf '@%s Nightly %s\n' "$BUZZ_REQUESTER_NAME" "$result" | reply answer

touch "$STATE_DIR/done"
