import nostr_sdk
import pytest

from orchestra.nostr.bech32 import Bech32Error, decode_npub, decode_nsec, encode_npub, encode_nsec
from orchestra.nostr.keys import Keys, parse_pubkey

PAIRS = [
    (
        "npub",
        "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg",
        "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e",
    ),
    (
        "nsec",
        "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5",
        "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa",
    ),
    (
        "npub",
        "npub1lycg5qvjtrp3qjf5f7zl382j9x6nrjz9sdhenvyxq8c3808qxmus6gq266",
        "f9308a019258c31049344f85f89d5229b531c845836f99b08601f113bce036f9",
    ),
    (
        "nsec",
        "nsec1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqps52s3re",
        "0000000000000000000000000000000000000000000000000000000000000003",
    ),
]


@pytest.mark.parametrize(("kind", "bech", "hexkey"), PAIRS)
def test_vectors(kind, bech, hexkey):
    encode, decode = (encode_npub, decode_npub) if kind == "npub" else (encode_nsec, decode_nsec)
    assert encode(hexkey) == bech
    assert decode(bech) == hexkey
    assert decode(bech.upper()) == hexkey


def test_mixed_case_and_bad_checksum_are_refused():
    bech = PAIRS[0][1]
    with pytest.raises(Bech32Error):
        decode_npub(bech[:10] + bech[10:].upper())
    with pytest.raises(Bech32Error):
        decode_npub(bech[:-1] + ("q" if bech[-1] != "q" else "p"))
    with pytest.raises(Bech32Error):
        decode_npub(PAIRS[1][1])  # an nsec is not an npub


def test_agrees_with_nostr_sdk():
    for _ in range(20):
        keys = Keys.generate()
        sdk_keys = nostr_sdk.Keys.parse(keys.secret_hex)
        assert sdk_keys.public_key().to_bech32() == keys.npub
        assert sdk_keys.secret_key().to_bech32() == keys.nsec
        assert Keys.parse(keys.nsec) == keys


def test_parse_key_errors_never_echo_a_secret():
    secret = Keys.generate().secret_hex
    with pytest.raises(ValueError) as caught:
        Keys.parse(secret[:-1] + "z")
    assert secret[:20] not in str(caught.value)
    with pytest.raises(ValueError):
        parse_pubkey("npub1notvalid")
    with pytest.raises(ValueError, match="not a point"):
        parse_pubkey("ff" * 32)
