"""The fixture's `[[files]]` as the trial renders them (orchestrator.md §6)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from orchestra.config.fixture import Fixture, FixtureFile
from orchestra.paths import TrialPaths


def render_fixture_files(trial: TrialPaths, fixture: Fixture) -> list[tuple[FixtureFile, Path]]:
    """Render `[[files]]` with one `{{random_hex}}` value into the trial's record copies under
    `agent/buzz/fixture-files/`; each spec with its rendered host file (placed by setup)."""
    if not fixture.files:
        return []
    random_hex = secrets.token_hex(16)
    rendered = []
    for spec in fixture.files:
        record = trial.fixture_file_record(spec.path)
        make_parents(record.parent)
        record.write_text(spec.render(random_hex), encoding="utf-8")
        os.chmod(record, spec.mode_bits)
        rendered.append((spec, record))
    return rendered


def make_parents(directory: Path) -> None:
    """Missing directories up to `directory` are created 0755 whatever the umask, as `mkdir -p`
    makes them in a container."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir(mode=0o755)
        os.chmod(path, 0o755)
