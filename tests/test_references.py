"""Every `<page>.md §N[.M]` reference in the code names a section that exists in the repository's
own reference pages (docs/reference/), and nothing points at a file outside the checkout."""

import re
import subprocess
from pathlib import Path

from orchestra.paths import PROJECT_ROOT

REFERENCE = PROJECT_ROOT / "docs" / "reference"
SCANNED = ["orchestra", "tests", "bench", "README.md"]
PAGES = ["orchestrator", "protocol", "agent-harness", "buzz-cli", "dataset", "scale-out"]

SECTION = r"§\s?\d+(?:\.\d+)*"
# Between the parts of a citation: spaces, or a line break and a comment's `#` (wrapped text).
GAP = r"\s*(?:#\s*)?"
# `orchestrator.md §7.10–§7.11`, `protocol.md §5.4, §15.4`, `scale-out.md §5-§6`, `dataset.md` §2
REFERENCE_RUN = re.compile(
    rf"\b(?P<page>{'|'.join(PAGES)})\.md`?{GAP}"
    rf"(?P<run>{SECTION}(?:{GAP}(?:,|-|–|and){GAP}{SECTION})*)"
)
NUMBERED_HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.MULTILINE)


def tracked_files() -> list[Path]:
    """The scanned files git tracks, except this one (its probes cite missing sections)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", *SCANNED],
        cwd=PROJECT_ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    paths = [PROJECT_ROOT / name for name in listed.split("\0") if name]
    return [path for path in paths if path != Path(__file__)]


def headings(page: str) -> set[str]:
    path = REFERENCE / f"{page}.md"
    if not path.exists():
        return set()
    return set(NUMBERED_HEADING.findall(path.read_text(encoding="utf-8")))


def broken_references(files: list[Path], root: Path = PROJECT_ROOT) -> list[str]:
    numbers = {page: headings(page) for page in PAGES}
    broken = []
    for path in files:
        if path.suffix not in {".py", ".md", ".toml", ".sh", ".j2", ".html", ".txt"}:
            continue
        text = path.read_text(encoding="utf-8")
        for match in REFERENCE_RUN.finditer(text):
            page = match["page"]
            for section in re.finditer(SECTION, match["run"]):
                number = section[0].lstrip("§ ")
                if number not in numbers[page]:
                    line = text.count("\n", 0, match.start("run") + section.start()) + 1
                    broken.append(f"{path.relative_to(root)}:{line}: {page}.md §{number}")
    return broken


def test_every_reference_page_exists() -> None:
    missing = [page for page in PAGES if not (REFERENCE / f"{page}.md").exists()]
    assert missing == []


def test_every_section_reference_names_a_heading_of_its_page() -> None:
    assert broken_references(tracked_files()) == []


def test_a_missing_section_is_reported_with_file_and_line(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    lines = [
        "# orchestrator.md §12 and §7.2",
        "# protocol.md §13, §99.1 and scale-out.md §5-§6",
        "# a wrapped `dataset.md`",
        "# §2.1, §41",
    ]
    source.write_text("\n".join(lines), encoding="utf-8")
    assert broken_references([source], tmp_path) == [
        "probe.py:2: protocol.md §99.1",
        "probe.py:4: dataset.md §41",
    ]


def test_nothing_points_outside_the_checkout() -> None:
    outside = re.compile(r"\.\./shared|\"shared\"|parent / \"shared\"")
    hits = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}"
        for path in tracked_files() + sorted((PROJECT_ROOT / "docs").rglob("*.md"))
        if path.suffix in {".py", ".md"}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if outside.search(line)
    ]
    assert hits == []
