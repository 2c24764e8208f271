"""Makes the dataset test helpers (evidence_builder, verifier_harness, positives) importable
whatever import mode or package layout pytest uses for this directory."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
