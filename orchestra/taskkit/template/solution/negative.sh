# The mistake: the right word, posted top-level instead of in the requester's thread.
printf '@%s ready\n' "$BUZZ_REQUESTER_NAME" \
  | send_once answer --mention "$BUZZ_REQUESTER_PUBKEY"

touch "$STATE_DIR/done"
