"""NIP-19 `npub`/`nsec` (BIP-173 bech32, checksum constant 1, not bech32m)."""

import functools

_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_GENERATORS = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


class Bech32Error(ValueError):
    """The text is not a valid bech32 string of the expected kind."""


def _polymod(values: list[int]) -> int:
    checksum = 1
    for value in values:
        top = checksum >> 25
        checksum = (checksum & 0x1FFFFFF) << 5 ^ value
        for bit, generator in enumerate(_GENERATORS):
            if (top >> bit) & 1:
                checksum ^= generator
    return checksum


def _hrp_expand(hrp: str) -> list[int]:
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def _convert_bits(data: bytes | list[int], from_bits: int, to_bits: int, pad: bool) -> list[int]:
    acc = 0
    bits = 0
    out: list[int] = []
    max_value = (1 << to_bits) - 1
    for value in data:
        acc = (acc << from_bits) | value
        bits += from_bits
        while bits >= to_bits:
            bits -= to_bits
            out.append((acc >> bits) & max_value)
    if pad:
        if bits:
            out.append((acc << (to_bits - bits)) & max_value)
    elif bits >= from_bits or (acc << (to_bits - bits)) & max_value:
        raise Bech32Error("invalid padding")
    return out


def encode(hrp: str, data: bytes) -> str:
    words = _convert_bits(data, 8, 5, pad=True)
    checksum_input = _hrp_expand(hrp) + words + [0] * 6
    polymod = _polymod(checksum_input) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_CHARSET[w] for w in words + checksum)


def decode(text: str, expected_hrp: str) -> bytes:
    if text.lower() != text and text.upper() != text:
        raise Bech32Error("mixed case")
    text = text.lower()
    separator = text.rfind("1")
    if separator < 1 or separator + 7 > len(text):
        raise Bech32Error("missing separator or checksum")
    hrp, body = text[:separator], text[separator + 1 :]
    if hrp != expected_hrp:
        raise Bech32Error(f"expected an {expected_hrp} value, got {hrp!r}")
    try:
        words = [_CHARSET.index(c) for c in body]
    except ValueError:
        raise Bech32Error("invalid character") from None
    if _polymod(_hrp_expand(hrp) + words) != 1:
        raise Bech32Error("bad checksum")
    return bytes(_convert_bits(words[:-6], 5, 8, pad=False))


def _decode_key(text: str, hrp: str) -> str:
    data = decode(text, hrp)
    if len(data) != 32:
        raise Bech32Error(f"{hrp} must encode 32 bytes")
    return data.hex()


@functools.lru_cache(maxsize=4096)
def encode_npub(pubkey_hex: str) -> str:
    """Cached: rows and evidence name the same few public keys over and over."""
    return encode("npub", bytes.fromhex(pubkey_hex))


def decode_npub(text: str) -> str:
    return _decode_key(text, "npub")


@functools.lru_cache(maxsize=1024)  # secrets already live in this process's Keys objects
def encode_nsec(secret_hex: str) -> str:
    return encode("nsec", bytes.fromhex(secret_hex))


def decode_nsec(text: str) -> str:
    return _decode_key(text, "nsec")
