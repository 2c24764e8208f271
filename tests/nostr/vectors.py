"""Locations of the shared test vectors (../shared/vectors beside the checkout)."""

from pathlib import Path

VECTORS_DIR = Path(__file__).resolve().parents[3] / "shared" / "vectors"
