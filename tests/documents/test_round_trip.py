"""Every jobs-directory document survives its own round trip: what a model writes, the model
reads back equal, and writing that again gives the same bytes (orchestrator.md §10.1)."""

from pathlib import Path

import pytest

from orchestra.documents.floor import FloorRecord, RunFloor
from orchestra.documents.io import Document
from orchestra.documents.job import JobConfig, JobResult
from orchestra.documents.report import ReportDocument
from orchestra.documents.run import RunRecord
from orchestra.documents.trial import TrialConfig, TrialResult
from orchestra.paths import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures"
RUN = FIXTURES / "docker-env-run"
TRIAL = RUN / "docker-env" / "user-mention__pr4j7zp"

#: each document model with a file written by the orchestrator (some by earlier versions)
WRITTEN: list[tuple[type[Document], Path]] = [
    (RunRecord, RUN / "run.json"),
    (RunRecord, FIXTURES / "run-before-run-config" / "old-run" / "run.json"),
    (JobConfig, RUN / "docker-env" / "config.json"),
    (JobResult, RUN / "docker-env" / "result.json"),
    (TrialConfig, TRIAL / "config.json"),
    (TrialResult, TRIAL / "result.json"),
    *((ReportDocument, path) for path in sorted((FIXTURES / "report-json").glob("*.json"))),
    (RunFloor, FIXTURES / "floor" / "floor.json"),
    *(
        (FloorRecord, path)
        for path in sorted((FIXTURES / "floor").glob("*.json"))
        if path.name != "floor.json"
    ),
]


def test_every_document_model_has_a_written_file() -> None:
    assert {model for model, _ in WRITTEN} == set(Document.__subclasses__())


@pytest.mark.parametrize(
    ("model", "path"), WRITTEN, ids=[str(p.relative_to(FIXTURES)) for _, p in WRITTEN]
)
def test_a_document_reads_back_what_it_wrote(
    model: type[Document], path: Path, tmp_path: Path
) -> None:
    document = model.load(path)
    document.write(tmp_path / path.name)
    again = model.load(tmp_path / path.name)
    assert again == document
    assert again.to_json() == (tmp_path / path.name).read_text(encoding="utf-8")
