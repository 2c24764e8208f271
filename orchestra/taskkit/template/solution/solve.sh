printf '@%s ready\n' "$BUZZ_REQUESTER_NAME" | reply answer

touch "$STATE_DIR/done"
