#!/usr/bin/env bash
# Reference solution for buzz-native/read-named-path-outside-workspace; replayed by the built-in oracle model.
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

sentence="$(python3 - "$HOME/.claude/skills/context-health-check/SKILL.md" <<'PY'
import re
import sys

with open(sys.argv[1], encoding="utf-8") as handle:
    text = handle.read()
check_id = re.search(r"^CHECK_ID:\s*(\S+)\s*$", text, re.MULTILINE).group(1)
action = re.search(r"^ACTION:\s*(.*\S)\s*$", text, re.MULTILINE).group(1)
print(f"The file reports CHECK_ID {check_id} and ACTION: {action}")
PY
)"
printf '@%s %s\n' "$BUZZ_REQUESTER_NAME" "$sentence" | reply answer

touch "$STATE_DIR/done"
