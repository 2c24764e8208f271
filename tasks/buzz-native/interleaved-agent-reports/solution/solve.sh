#!/usr/bin/env bash
# Reference solution for buzz-native/interleaved-agent-reports; replayed by the built-in oracle model.
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

summary="$(python3 - <<'PY'
import json
import os
import re
import subprocess
import time

CHANNEL = os.environ["BUZZ_CHANNEL_ID"]
ROOT = os.environ["BUZZ_REPLY_TO"]
WANTED = ("Ledger report", "Risk report", "Operations report")


def reply_target(event):
    for tag in event.get("tags", []):
        if len(tag) >= 4 and tag[0] == "e" and tag[3] == "reply":
            return tag[1]
    return None


deadline = time.monotonic() + 120
while True:
    out = subprocess.run(["buzz", "messages", "get", "--channel", CHANNEL, "--limit", "200"],
                         check=True, capture_output=True, text=True).stdout
    events = json.loads(out) if out.strip() else []
    reports = {}
    for event in events if isinstance(events, list) else []:
        for label in WANTED:
            if label in event.get("content", "") and reply_target(event) == ROOT:
                reports[label] = event["content"]
    if len(reports) == len(WANTED):
        break
    if time.monotonic() > deadline:
        raise SystemExit(f"reports still missing: {sorted(set(WANTED) - set(reports))}")
    time.sleep(2)

text = " ".join(reports[label] for label in WANTED)
north = int(re.search(r"North is (\d+)", text).group(1))
south = int(re.search(r"South is (\d+)", text).group(1))
reserve = int(re.search(r"reserve of (\d+)", text).group(1))
multiplier = int(re.search(r"multiplier is (\d+)", text).group(1))
forecast = (north + south - reserve) * multiplier
print(f"Final forecast: {forecast}")
print(f"- North: {north}")
print(f"- South: {south}")
print(f"- Reserve: {reserve}")
print(f"- Multiplier: {multiplier}")
print(f"({north} + {south} - {reserve}) x {multiplier} = {forecast}")
PY
)"
printf '@%s %s\n' "$BUZZ_REQUESTER_NAME" "$summary" | reply answer

touch "$STATE_DIR/done"
