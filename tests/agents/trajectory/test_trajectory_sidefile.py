"""The trajectory side file (agent-harness.md §2.13): lines survive concurrent writers and a
killed one; what is not a record is dropped with a note."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from orchestra.agents.trajectory.sidefile import (
    SideFileWriter,
    UserLine,
    read_side_file,
)

TS = "2026-11-29T17:42:03.123456Z"

WRITER = """
import sys
from orchestra.agents.trajectory.sidefile import SideFileWriter, UserLine
writer = SideFileWriter(sys.argv[1])
for n in range(int(sys.argv[3])):
    writer.write(UserLine(ts="t", session_id=sys.argv[2], text=f"{n}:" + "x" * 20000))
"""


def test_writers_sharing_the_file_never_interleave_a_line(tmp_path: Path) -> None:
    path = tmp_path / "a.trajectory.jsonl"
    lines_each = 200  # 20 kB lines: far above what one buffered write would keep whole
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(lines_each)])
        for name in ("ses_a", "ses_b", "ses_c")
    ]
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0]
    side = read_side_file(path)
    assert side.notes == []
    for session in ("ses_a", "ses_b", "ses_c"):
        texts = [line.text for line in side.lines if line.session_id == session]
        assert [text.split(":")[0] for text in texts] == [str(n) for n in range(lines_each)]


def test_an_incomplete_last_line_is_dropped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "a.trajectory.jsonl"
    writer = SideFileWriter(str(path))
    writer.write(UserLine(ts=TS, session_id="ses_a", text="kept"))
    writer.close()
    with path.open("ab") as handle:
        handle.write(b'{"kind": "user", "ts": "2026-11')
    side = read_side_file(path)
    assert [line.text for line in side.lines] == ["kept"]  # type: ignore[union-attr]
    assert side.notes == [
        "line 2 dropped: incomplete (31 bytes, no newline; the agent stopped while writing it)"
    ]


def test_a_new_writer_ends_a_fragment_so_its_own_lines_survive(tmp_path: Path) -> None:
    path = tmp_path / "a.trajectory.jsonl"
    path.write_bytes(b'{"kind": "user", "ts": "2026-11')
    writer = SideFileWriter(str(path))
    writer.write(UserLine(ts=TS, session_id="ses_b", text="after the restart"))
    writer.close()
    side = read_side_file(path)
    assert [line.text for line in side.lines] == ["after the restart"]  # type: ignore[union-attr]
    assert len(side.notes) == 1 and side.notes[0].startswith("line 1 skipped: ")


def test_lines_that_are_no_record_are_skipped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "a.trajectory.jsonl"
    good = {"kind": "user", "ts": TS, "session_id": "s", "text": "ok"}
    path.write_text(
        "\n".join(
            [
                json.dumps(good),
                json.dumps({**good, "kind": "telemetry"}),
                json.dumps({**good, "unexpected": 1}),
                json.dumps({**good, "text": 5}),
                "",
                "not json",
            ]
        )
        + "\n"
    )
    side = read_side_file(path)
    assert len(side.lines) == 1
    assert [note.split(":")[0] for note in side.notes] == [
        "line 2 skipped",
        "line 3 skipped",
        "line 4 skipped",
        "line 6 skipped",
    ]


def test_a_lone_surrogate_from_a_provider_becomes_a_replacement_character(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.trajectory.jsonl"
    writer = SideFileWriter(str(path))
    writer.write(UserLine(ts=TS, session_id="s", text="bad \ud800 text, é kept"))
    writer.close()
    (line,) = read_side_file(path).lines
    assert line.text == "bad \ufffd text, é kept"  # type: ignore[union-attr]
