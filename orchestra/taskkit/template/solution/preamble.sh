#!/usr/bin/env bash
# __HEADER__
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

