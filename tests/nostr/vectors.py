"""Location of the BIP-340 and NIP-44 test vectors kept in the repository (see its README)."""

from pathlib import Path

VECTORS_DIR = Path(__file__).resolve().parent / "vectors"
