import hashlib
import json

import pytest

from orchestra.nostr import nip44
from orchestra.nostr.keys import Keys

from .vectors import VECTORS_DIR

VECTORS_FILE = VECTORS_DIR / "nip44.vectors.json"
V2 = json.loads(VECTORS_FILE.read_text())["v2"]
VALID, INVALID = V2["valid"], V2["invalid"]


def test_the_vectors_are_the_ones_the_nip44_spec_names() -> None:
    """NIP-44 (nostr-protocol/nips, 44.md) publishes the sha256 of its vectors file."""
    digest = hashlib.sha256(VECTORS_FILE.read_bytes()).hexdigest()
    assert digest == "269ed0f69e4c192512cc779e78c555090cebc7c785b609e338a62afc3ce25040"


@pytest.mark.parametrize("case", VALID["get_conversation_key"])
def test_conversation_key(case):
    key = nip44.conversation_key(bytes.fromhex(case["sec1"]), case["pub2"])
    assert key.hex() == case["conversation_key"]


def test_message_keys():
    conv_key = bytes.fromhex(VALID["get_message_keys"]["conversation_key"])
    for case in VALID["get_message_keys"]["keys"]:
        chacha_key, chacha_nonce, hmac_key = nip44.message_keys(
            conv_key, bytes.fromhex(case["nonce"])
        )
        assert chacha_key.hex() == case["chacha_key"]
        assert chacha_nonce.hex() == case["chacha_nonce"]
        assert hmac_key.hex() == case["hmac_key"]


@pytest.mark.parametrize("case", VALID["calc_padded_len"])
def test_padded_len(case):
    length, padded = case
    assert nip44.calc_padded_len(length) == padded


@pytest.mark.parametrize("case", VALID["encrypt_decrypt"])
def test_encrypt_decrypt(case):
    sec1, sec2 = bytes.fromhex(case["sec1"]), bytes.fromhex(case["sec2"])
    pub2 = Keys.from_secret(sec2).pubkey
    conv_key = nip44.conversation_key(sec1, pub2)
    assert conv_key.hex() == case["conversation_key"]
    payload = nip44.encrypt(case["plaintext"], conv_key, bytes.fromhex(case["nonce"]))
    assert payload == case["payload"]
    # Symmetric: the peer derives the same key and reads the message.
    peer_key = nip44.conversation_key(sec2, Keys.from_secret(sec1).pubkey)
    assert nip44.decrypt(payload, peer_key) == case["plaintext"]


@pytest.mark.parametrize("case", VALID["encrypt_decrypt_long_msg"])
def test_encrypt_decrypt_long(case):
    plaintext = case["pattern"] * case["repeat"]
    assert hashlib.sha256(plaintext.encode()).hexdigest() == case["plaintext_sha256"]
    conv_key = bytes.fromhex(case["conversation_key"])
    payload = nip44.encrypt(plaintext, conv_key, bytes.fromhex(case["nonce"]))
    assert hashlib.sha256(payload.encode()).hexdigest() == case["payload_sha256"]
    assert nip44.decrypt(payload, conv_key) == plaintext


@pytest.mark.parametrize("length", INVALID["encrypt_msg_lengths"])
def test_encrypt_refuses_bad_lengths(length):
    with pytest.raises(nip44.Nip44Error):
        nip44.encrypt("a" * length, bytes(32), bytes(32))


@pytest.mark.parametrize("case", INVALID["get_conversation_key"], ids=lambda c: c["note"])
def test_conversation_key_refuses_bad_keys(case):
    with pytest.raises(nip44.Nip44Error):
        nip44.conversation_key(bytes.fromhex(case["sec1"]), case["pub2"])


@pytest.mark.parametrize("case", INVALID["decrypt"], ids=lambda c: c["note"])
def test_decrypt_refuses_bad_payloads(case):
    with pytest.raises(nip44.Nip44Error):
        nip44.decrypt(case["payload"], bytes.fromhex(case["conversation_key"]))


def test_payload_shape_check():
    conv_key = bytes(32)
    assert nip44.is_v2_payload_shape(nip44.encrypt("hello", conv_key))
    assert not nip44.is_v2_payload_shape("#" + "A" * 140)
    assert not nip44.is_v2_payload_shape("not base64 at all" * 10)
    assert not nip44.is_v2_payload_shape(None)


def test_round_trip_with_nostr_sdk():
    import nostr_sdk as sdk

    alice, bob = Keys.generate(), Keys.generate()
    text = "cold memory ✓ — line one\nline two"
    ours = nip44.encrypt(text, nip44.conversation_key(alice.secret, bob.pubkey))
    theirs_keys = sdk.Keys.parse(bob.secret_hex)
    alice_pub = sdk.PublicKey.parse(alice.pubkey)
    assert sdk.nip44_decrypt(theirs_keys.secret_key(), alice_pub, ours) == text
    payload = sdk.nip44_encrypt(theirs_keys.secret_key(), alice_pub, text, sdk.Nip44Version.V2)
    assert nip44.decrypt(payload, nip44.conversation_key(alice.secret, bob.pubkey)) == text
