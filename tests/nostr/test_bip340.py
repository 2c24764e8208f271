import csv

import coincurve
import pytest

from orchestra.nostr.keys import Keys, verify_signature

from .vectors import VECTORS_DIR

with (VECTORS_DIR / "bip340-test-vectors.csv").open(newline="") as vectors_file:
    ROWS = list(csv.DictReader(vectors_file))


def test_every_vector_is_loaded():
    assert len(ROWS) == 19


@pytest.mark.parametrize("row", ROWS, ids=[row["index"] for row in ROWS])
def test_verification_matches_the_vector(row):
    expected = row["verification result"] == "TRUE"
    assert (
        verify_signature(
            row["public key"].lower(),
            bytes.fromhex(row["message"]),
            bytes.fromhex(row["signature"]),
        )
        is expected
    )


SIGNING_ROWS = [row for row in ROWS if row["secret key"]]


@pytest.mark.parametrize("row", SIGNING_ROWS, ids=[row["index"] for row in SIGNING_ROWS])
def test_signing_reproduces_the_vector(row):
    keys = Keys.from_secret(bytes.fromhex(row["secret key"]))
    assert keys.pubkey == row["public key"].lower()
    message = bytes.fromhex(row["message"])
    if len(message) != 32:
        # coincurve signs 32-byte digests only; Nostr ids are always 32 bytes.
        with pytest.raises(ValueError):
            keys.sign(message, bytes.fromhex(row["aux_rand"]))
        return
    assert keys.sign(message, bytes.fromhex(row["aux_rand"])).hex().upper() == row["signature"]


def test_invalid_xonly_key_is_a_bad_signature_not_a_crash():
    assert verify_signature("ff" * 32, bytes(32), bytes(64)) is False
    with pytest.raises(ValueError):
        coincurve.PublicKeyXOnly(bytes.fromhex("ff" * 32))


def test_repr_never_shows_the_secret():
    keys = Keys.generate()
    assert keys.secret_hex not in repr(keys)
    assert keys.nsec not in repr(keys)
