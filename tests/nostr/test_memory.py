import pytest

from orchestra.nostr import memory, nip44
from orchestra.nostr.keys import Keys

KEYS_3 = Keys.parse("0" * 63 + "3")


def test_self_key_and_blinded_slug_vectors():
    assert (
        memory.self_key(KEYS_3).hex()
        == "fc5e31fe0006369674bb81fb7aab0a54241d5ac42f631399d51a8ed0f888c300"
    )
    assert memory.blinded_slug(KEYS_3, "core") == (
        "e5fca321bd1ba40e1b9f6ed641b386e200e21bf2c554d29263a9ed9308508557"
    )
    assert memory.blinded_slug(KEYS_3, "total-customers-metric") == (
        "1afa494bef9809c9921aa4e926aa90ea06125cd9e0d0846f370938cda89d419f"
    )


@pytest.mark.parametrize(
    "slug", ["core", "mem/deploy-notes", "total-customers-per-month", "a", "A" * 128]
)
def test_valid_slugs(slug):
    assert memory.is_valid_slug(slug)


@pytest.mark.parametrize("slug", ["", "-lead", "has space", "A" * 129, "ümlaut", "dot..ok?"])
def test_invalid_slugs(slug):
    assert not memory.is_valid_slug(slug)


def test_entry_round_trip_through_nip44():
    value = "Total customers: 4,812 — line two\nline three"
    plaintext = memory.encode_entry("core", value)
    assert (
        plaintext
        == '{"v":1,"slug":"core","value":"Total customers: 4,812 — line two\\nline three"}'
    )
    payload = nip44.encrypt(plaintext, memory.self_key(KEYS_3))
    decoded = memory.decode_plaintext(nip44.decrypt(payload, memory.self_key(KEYS_3)))
    assert decoded["value"] == value


def test_tombstone_and_corrupt_plaintexts():
    assert memory.decode_plaintext(memory.encode_tombstone("core"))["deleted"] is True
    for junk in ("not json", "[]", '{"v":2,"slug":"x","value":"y"}', '{"v":1,"slug":"x"}'):
        with pytest.raises(memory.MemoryFormatError):
            memory.decode_plaintext(junk)
