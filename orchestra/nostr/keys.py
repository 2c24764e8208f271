"""secp256k1 keys and BIP-340 Schnorr signatures (via coincurve)."""

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import coincurve

from orchestra.nostr.bech32 import Bech32Error, decode_npub, decode_nsec, encode_npub, encode_nsec
from orchestra.nostr.hexutil import is_hex64

_CURVE_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def _hex_or_bech32(
    text: str, prefix: str, decode: Callable[[str], str], invalid: str
) -> str | None:
    """Lowercase hex of a key written as `<prefix>…` (bech32) or as 64 hex characters; None
    when it is neither. A bad bech32 string raises `ValueError` with `invalid` first."""
    if text[:5].lower() == prefix:
        try:
            return decode(text)
        except Bech32Error as exc:
            raise ValueError(f"{invalid} ({exc})") from None
    lowered = text.lower()
    return lowered if is_hex64(lowered) else None


@dataclass(frozen=True, slots=True)
class Keys:
    """A secret key and its x-only public key. `repr` never shows the secret."""

    secret: bytes = field(repr=False)
    pubkey: str
    _private: coincurve.PrivateKey = field(repr=False, compare=False)

    @classmethod
    def from_secret(cls, secret: bytes) -> "Keys":
        if len(secret) != 32 or not 0 < int.from_bytes(secret, "big") < _CURVE_ORDER:
            raise ValueError("secret key must be 32 bytes in the range 1..n-1")
        private = coincurve.PrivateKey(secret)
        pubkey = private.public_key.format(compressed=True)[1:].hex()
        return cls(secret=secret, pubkey=pubkey, _private=private)

    @classmethod
    def generate(cls) -> "Keys":
        while True:
            try:
                return cls.from_secret(os.urandom(32))
            except ValueError:  # astronomically unlikely out-of-range draw
                continue

    @classmethod
    def parse(cls, text: str) -> "Keys":
        """Accept a secret key as 64 hex characters or an `nsec1…` string.

        The error message never repeats the input, which may be a secret.
        """
        text = text.strip()
        secret_hex = _hex_or_bech32(text, "nsec1", decode_nsec, "invalid nsec private key")
        if secret_hex is None:
            raise ValueError("private key must be 64 hex characters or an nsec1 string")
        return cls.from_secret(bytes.fromhex(secret_hex))

    @property
    def secret_hex(self) -> str:
        return self.secret.hex()

    @property
    def npub(self) -> str:
        return encode_npub(self.pubkey)

    @property
    def nsec(self) -> str:
        return encode_nsec(self.secret.hex())

    def sign(self, message32: bytes, aux: bytes | None = None) -> bytes:
        return self._private.sign_schnorr(message32, aux if aux is not None else os.urandom(32))


def is_valid_pubkey(pubkey_hex: object) -> bool:
    if not is_hex64(pubkey_hex):
        return False
    return _on_curve(pubkey_hex)


@functools.lru_cache(maxsize=4096)
def _on_curve(pubkey_hex: str) -> bool:
    """Cached: lifting x onto the curve costs a modular square root, and the same few keys
    (channel members, mentioned users) are checked again and again."""
    try:
        coincurve.PublicKeyXOnly(bytes.fromhex(pubkey_hex))
    except ValueError:
        return False
    return True


def verify_signature(pubkey_hex: str, message32: bytes, signature64: bytes) -> bool:
    try:
        return coincurve.PublicKeyXOnly(bytes.fromhex(pubkey_hex)).verify(signature64, message32)
    except ValueError:
        return False


def parse_pubkey(text: str) -> str:
    """A public key given as 64 hex characters or `npub1…`, returned as lowercase hex."""
    text = text.strip()
    pubkey = _hex_or_bech32(text, "npub1", decode_npub, f"invalid npub {text!r}")
    if pubkey is None:
        raise ValueError(f"invalid public key {text!r}: expected 64 hex characters or npub1…")
    if not is_valid_pubkey(pubkey):
        raise ValueError(f"invalid public key {text!r}: not a point on secp256k1")
    return pubkey
