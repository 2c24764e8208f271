"""The verifier's world (orchestrator.md §9): exactly the files a verifier may read, each at the
absolute path the task's scripts name, from copies the harness owns.

Three sources and nothing else: the evidence the orchestrator exported from the relay, the
task's `tests/` as read when the job started (`Task.tests`), and the fixture's `[[files]]` as
the trial rendered them. No byte of it is read back from where agents ran, so whatever they
did to their sandbox, workspace or container cannot reach the verdict except through the relay.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from orchestra.config.task import TaskFile
from orchestra.documents import trial as documents
from orchestra.documents.trial import InputSource
from orchestra.files import make_parents, remove_path
from orchestra.paths import CONTAINER_EVIDENCE, CONTAINER_TEST_SH, CONTAINER_TESTS, LOGS_VERIFIER

EVIDENCE_MODE = 0o644
EXECUTABLE = 0o111
#: Owner of the inputs inside a verifier container: not root, so that a verifier running as
#: root without capabilities can read them but neither write nor chmod them.
INPUT_OWNER = 65534  # `nobody` in Debian and most images
READ_ONLY = 0o555  # directories the archive creates for the inputs; files lose their write bits
#: every input is readable in the archive: the verifier runs as root without capabilities, so a
#: fixture file planted 0600 (a private canary) would otherwise be unreadable to it as `nobody`'s
READABLE = 0o444
LEFTOVERS_SHOWN = 20


@dataclass(frozen=True)
class InputFile:
    path: PurePosixPath  # absolute, as the verifier sees it
    content: bytes
    mode: int
    source: InputSource

    @functools.cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


@dataclass(frozen=True)
class VerifierInputs:
    """The files of one trial's verifier, sorted by path."""

    files: tuple[InputFile, ...]

    @classmethod
    def assemble(
        cls,
        *,
        evidence: bytes | None,
        tests: Iterable[TaskFile],
        fixture_files: Iterable[tuple[str, bytes, int]],
    ) -> VerifierInputs:
        """`evidence`: None when an export a task does not require failed (§8.6: the verifier
        then finds no evidence file); `fixture_files`: (declared path, rendered content, mode)
        of each `[[files]]` entry."""
        files = []
        if evidence is not None:
            files.append(InputFile(CONTAINER_EVIDENCE, evidence, EVIDENCE_MODE, "evidence"))
        for test in tests:
            path = CONTAINER_TESTS / test.relative
            # §9.2 step 3: test.sh is made executable whatever its mode in the task directory
            mode = test.mode | EXECUTABLE if path == CONTAINER_TEST_SH else test.mode
            files.append(InputFile(path, test.content, mode, "tests"))
        files += [
            InputFile(PurePosixPath(path), content, mode, "fixture")
            for path, content, mode in fixture_files
        ]
        return cls(tuple(sorted(files, key=lambda file: file.path)))

    @property
    def evidence(self) -> InputFile | None:
        return next((file for file in self.files if file.source == "evidence"), None)

    def file(self, path: PurePosixPath) -> InputFile | None:
        return next((file for file in self.files if file.path == path), None)

    def record(self) -> documents.VerifierInputs:
        """The `verifier_inputs` object of the trial's result.json (§10.3)."""
        return documents.VerifierInputs(
            evidence_sha256=self.evidence.sha256 if self.evidence is not None else None,
            files=[
                documents.VerifierInputFile(
                    path=str(file.path),
                    source=file.source,
                    sha256=file.sha256,
                    size=len(file.content),
                )
                for file in self.files
            ],
        )

    # --- the host tree (local env) ------------------------------------------------------

    def write_tree(self, root: Path) -> None:
        """`root` becomes a fresh directory holding every input at `root/<path>` (parents
        0755): the local verifier's world (§9.3)."""
        remove_path(root)
        make_parents(root)
        for file in self.files:
            target = host_path(root, file.path)
            make_parents(target.parent)
            target.write_bytes(file.content)
            target.chmod(file.mode)

    def changed_in(self, root: Path) -> list[str]:
        """Inputs whose copy under `root` is no longer what was written (or not a plain file)."""
        changed = []
        for file in self.files:
            target = host_path(root, file.path)
            try:
                same = not target.is_symlink() and target.read_bytes() == file.content
            except OSError:
                same = False
            if not same:
                changed.append(str(file.path))
        return changed

    # --- the archive (docker env) -------------------------------------------------------

    def archive(self) -> bytes:
        """A tar of the inputs for extraction at `/` of a verifier container that has never
        run (§9.2): inputs owned by `INPUT_OWNER` and read-only, under `/tests` and
        `/logs/artifacts` directories of that owner; a fresh, empty `/logs/verifier` owned by
        root, the verifier's only output."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for directory in (CONTAINER_TESTS, CONTAINER_EVIDENCE.parent):
                tar.addfile(_directory_entry(directory, INPUT_OWNER, READ_ONLY))
            tar.addfile(_directory_entry(LOGS_VERIFIER, 0, 0o755))
            for file in self.files:
                entry = tarfile.TarInfo(_member_name(file.path))
                entry.size = len(file.content)
                entry.mode = (file.mode | READABLE) & READ_ONLY
                entry.uid = entry.gid = INPUT_OWNER
                tar.addfile(entry, io.BytesIO(file.content))
        return buffer.getvalue()


def clear_verifier_dirs(*directories: Path, log: Callable[[str], None]) -> None:
    """Make each directory fresh and empty before a verifier runs. Whatever is found there was
    not written by the harness for this run (a reward file an agent planted, an earlier run's
    outputs): it is deleted and named in `log`. A symlink or file in a directory's place is
    removed, never followed."""
    for directory in directories:
        found = _files_under(directory)
        if found:
            shown = ", ".join(found[:LEFTOVERS_SHOWN]) + (
                " …" if len(found) > LEFTOVERS_SHOWN else ""
            )
            log(f"removed {len(found)} file(s) found before the verifier ran: {shown}")
        remove_path(directory)
        make_parents(directory)


def _files_under(directory: Path) -> list[str]:
    """Entries under `directory` (not following symlinks), relative to its parent."""
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        return [directory.name]
    found = []
    for parent, dirs, files in os.walk(directory):
        for name in sorted(files) + sorted(d for d in dirs if Path(parent, d).is_symlink()):
            found.append(Path(parent, name).relative_to(directory.parent).as_posix())
    return sorted(found)


def host_path(root: Path, path: PurePosixPath) -> Path:
    """Where the input at container path `path` lives in a host tree rooted at `root`."""
    return root / _member_name(path)


def _member_name(path: PurePosixPath) -> str:
    return str(path).lstrip("/")


def _directory_entry(path: PurePosixPath, owner: int, mode: int) -> tarfile.TarInfo:
    entry = tarfile.TarInfo(_member_name(path))
    entry.type = tarfile.DIRTYPE
    entry.mode = mode
    entry.uid = entry.gid = owner
    return entry
