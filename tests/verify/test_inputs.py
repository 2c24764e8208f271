"""The verifier's world: assembled from the harness's copies, written, archived, recorded
(orchestrator.md §9, §10.3)."""

import hashlib
import io
import tarfile
from pathlib import Path, PurePosixPath

from orchestra.config.task import TaskFile
from orchestra.verify.inputs import INPUT_OWNER, VerifierInputs, clear_verifier_dirs

SKILL = "/home/buzz/.claude/skills/x/SKILL.md"


def inputs() -> VerifierInputs:
    return VerifierInputs.assemble(
        evidence=b'{"messages": []}\n',
        tests=[
            TaskFile("verify.py", b"print('verify')\n", 0o644),
            TaskFile("test.sh", b"#!/bin/sh\n", 0o644),
            TaskFile("data/expected.json", b"{}\n", 0o600),
        ],
        fixture_files=[(SKILL, b"CHECK_ID: chc-1\n", 0o640)],
    )


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_record_names_every_input_with_its_source_and_hash() -> None:
    record = inputs().record().model_dump()
    assert record["evidence_sha256"] == sha(b'{"messages": []}\n')
    assert record["files"] == [
        {"path": SKILL, "source": "fixture", "sha256": sha(b"CHECK_ID: chc-1\n"), "size": 16},
        {
            "path": "/logs/artifacts/buzz-evidence.json",
            "source": "evidence",
            "sha256": sha(b'{"messages": []}\n'),
            "size": 17,
        },
        {
            "path": "/tests/data/expected.json",
            "source": "tests",
            "sha256": sha(b"{}\n"),
            "size": 3,
        },
        {"path": "/tests/test.sh", "source": "tests", "sha256": sha(b"#!/bin/sh\n"), "size": 10},
        {
            "path": "/tests/verify.py",
            "source": "tests",
            "sha256": sha(b"print('verify')\n"),
            "size": 16,
        },
    ]


def test_no_evidence_means_no_evidence_file() -> None:
    bare = VerifierInputs.assemble(evidence=None, tests=[], fixture_files=[])
    assert bare.files == () and bare.record().model_dump() == {"evidence_sha256": None, "files": []}


def test_the_host_tree_is_fresh_and_changes_are_found(tmp_path: Path) -> None:
    root = tmp_path / "verifier-inputs"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "planted.py").write_text("x")
    world = inputs()
    world.write_tree(root)
    written = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert written == [
        "home/buzz/.claude/skills/x/SKILL.md",
        "logs/artifacts/buzz-evidence.json",
        "tests/data/expected.json",
        "tests/test.sh",
        "tests/verify.py",
    ]
    assert (root / "tests/test.sh").stat().st_mode & 0o777 == 0o755  # made executable
    assert (root / SKILL.lstrip("/")).stat().st_mode & 0o777 == 0o640
    assert world.changed_in(root) == []
    (root / "tests/verify.py").write_text("forged")
    (root / "logs/artifacts/buzz-evidence.json").unlink()
    skill = root / SKILL.lstrip("/")
    skill.unlink()
    skill.symlink_to(tmp_path / "elsewhere")
    assert world.changed_in(root) == [
        SKILL,
        "/logs/artifacts/buzz-evidence.json",
        "/tests/verify.py",
    ]


def test_the_archive_makes_inputs_read_only_and_a_fresh_verifier_output_dir() -> None:
    with tarfile.open(fileobj=io.BytesIO(inputs().archive())) as tar:
        members = {member.name: member for member in tar.getmembers()}
        evidence = tar.extractfile(members["logs/artifacts/buzz-evidence.json"])
        assert evidence is not None and evidence.read() == b'{"messages": []}\n'
    assert {name: (m.uid, oct(m.mode), m.isdir()) for name, m in members.items()} == {
        "tests": (INPUT_OWNER, "0o555", True),
        "logs/artifacts": (INPUT_OWNER, "0o555", True),
        "logs/verifier": (0, "0o755", True),
        SKILL.lstrip("/"): (INPUT_OWNER, "0o444", False),  # 0640: readable to all
        "logs/artifacts/buzz-evidence.json": (INPUT_OWNER, "0o444", False),
        "tests/data/expected.json": (INPUT_OWNER, "0o444", False),  # 0600: readable to all
        "tests/test.sh": (INPUT_OWNER, "0o555", False),
        "tests/verify.py": (INPUT_OWNER, "0o444", False),
    }


def test_clearing_logs_what_was_found_and_never_follows_a_symlink(tmp_path: Path) -> None:
    trial = tmp_path / "trial"
    verifier = trial / "verifier"
    (verifier / "nested").mkdir(parents=True)
    (verifier / "reward.json").write_text('{"reward": 1.0}')
    (verifier / "nested" / "details.json").write_text("{}")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    inputs_dir = trial / "verifier-inputs"
    inputs_dir.symlink_to(precious)  # an agent's trap: emptying it must not empty `precious`
    notes: list[str] = []
    clear_verifier_dirs(verifier, inputs_dir, trial / "fresh", log=notes.append)
    assert notes == [
        "removed 2 file(s) found before the verifier ran: verifier/nested/details.json, "
        "verifier/reward.json",
        "removed 1 file(s) found before the verifier ran: verifier-inputs",
    ]
    assert (precious / "keep.txt").read_text() == "keep"
    for directory in (verifier, inputs_dir, trial / "fresh"):
        assert directory.is_dir() and not directory.is_symlink() and not any(directory.iterdir())


def test_an_input_is_found_by_its_path() -> None:
    world = inputs()
    found = world.file(PurePosixPath("/tests/test.sh"))
    assert found is not None and found.mode == 0o755 and found.source == "tests"
    assert world.file(PurePosixPath("/tests/missing")) is None


def test_a_private_fixture_file_is_readable_to_the_docker_verifier() -> None:
    """A `[[files]]` entry planted 0600 (a canary only the agent's user may read) stays
    readable to the verifier, which runs as root without capabilities over `nobody`'s files."""
    private = VerifierInputs.assemble(
        evidence=None, tests=[], fixture_files=[("/home/buzz/.acme/credentials", b"x\n", 0o600)]
    )
    with tarfile.open(fileobj=io.BytesIO(private.archive())) as tar:
        entry = tar.getmember("home/buzz/.acme/credentials")
    assert (entry.uid, oct(entry.mode)) == (INPUT_OWNER, "0o444")
