"""Fake agent trees for `--buzz-bin-dir`: small scripts that follow the contract, not the real tree."""

import sys
from pathlib import Path


def fake_agent_tree(directory: Path, acp_body: str) -> Path:
    """A `--buzz-bin-dir` whose buzz-acp is a small script (the contract, not the real tree)."""
    directory.mkdir()
    for name, body in (
        ("buzz-acp", acp_body),
        ("buzz-agent", "exit 0\n"),
        ("buzz-dev-mcp", "exit 0\n"),
    ):
        program = directory / name
        program.write_text(
            f"#!{sys.executable}\n" + body if name == "buzz-acp" else "#!/bin/sh\n" + body
        )
        program.chmod(0o755)
    return directory


SILENT_ACP = """\
import json, os, signal, sys, time
log = open(os.environ["BUZZ_ACP_EVENT_LOG"], "a")
log.write(json.dumps({"event": "subscribed", "channel_id": os.environ["BUZZ_ACP_CHANNELS"]}) + "\\n")
log.flush()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    signal.pause()
"""
