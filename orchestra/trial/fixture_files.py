"""The fixture's `[[files]]` as the trial renders them (orchestrator.md §6)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from orchestra.config.fixture import Fixture, FixtureFile
from orchestra.files import make_parents
from orchestra.paths import TrialPaths


@dataclass(frozen=True)
class RenderedFile:
    """One `[[files]]` entry as rendered for this trial. `content` is the harness's own copy,
    kept in memory: the verifier gets it back at `spec.path` whatever the agents did to the
    placed file or to the record under `agent/buzz/fixture-files/` (§9)."""

    spec: FixtureFile
    content: bytes
    record: Path  # the saved copy under `agent/buzz/fixture-files/`


def render_fixture_files(trial: TrialPaths, fixture: Fixture) -> list[RenderedFile]:
    """Render `[[files]]` with one `{{random_hex}}` value into the trial's record copies under
    `agent/buzz/fixture-files/` (placed by setup)."""
    if not fixture.files:
        return []
    random_hex = secrets.token_hex(16)
    rendered = []
    for spec in fixture.files:
        content = spec.render(random_hex).encode("utf-8")
        record = trial.fixture_file_record(spec.path)
        make_parents(record.parent)
        record.write_bytes(content)
        os.chmod(record, spec.mode_bits)
        rendered.append(RenderedFile(spec, content, record))
    return rendered
