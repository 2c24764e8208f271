"""NIP-44 version 2 encryption (protocol.md §11.2)."""

import base64
import binascii
import hashlib
import hmac
import os
import struct

import coincurve
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

_SALT = b"nip44-v2"
_VERSION = 2
MIN_PLAINTEXT_BYTES = 1
MAX_PLAINTEXT_BYTES = 65_535
_MIN_PAYLOAD_CHARS, _MAX_PAYLOAD_CHARS = 132, 87_472
_MIN_DECODED_BYTES, _MAX_DECODED_BYTES = 99, 65_603


class Nip44Error(ValueError):
    """Encryption input out of range, or a payload that does not decrypt."""


def conversation_key(secret: bytes, pubkey_hex: str) -> bytes:
    try:
        point = coincurve.PublicKey(b"\x02" + bytes.fromhex(pubkey_hex))
        shared_x = point.multiply(secret).format(compressed=True)[1:]
    except ValueError as exc:
        raise Nip44Error(f"invalid key: {exc}") from None
    return hmac.new(_SALT, shared_x, hashlib.sha256).digest()


def _hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def message_keys(conv_key: bytes, nonce: bytes) -> tuple[bytes, bytes, bytes]:
    """(chacha_key, chacha_nonce, hmac_key) for one message."""
    if len(conv_key) != 32:
        raise Nip44Error("invalid conversation key length")
    if len(nonce) != 32:
        raise Nip44Error("invalid nonce length")
    keys = _hkdf_expand(conv_key, nonce, 76)
    return keys[:32], keys[32:44], keys[44:76]


def calc_padded_len(length: int) -> int:
    if length <= 32:
        return 32
    next_power = 1 << (length - 1).bit_length()
    chunk = 32 if next_power <= 256 else next_power // 8
    return chunk * ((length - 1) // chunk + 1)


def _pad(plaintext: str) -> bytes:
    data = plaintext.encode("utf-8")
    if not MIN_PLAINTEXT_BYTES <= len(data) <= MAX_PLAINTEXT_BYTES:
        raise Nip44Error("invalid plaintext length: must be between 1 and 65535 bytes")
    return struct.pack(">H", len(data)) + data + bytes(calc_padded_len(len(data)) - len(data))


def _unpad(padded: bytes) -> str:
    (length,) = struct.unpack(">H", padded[:2])
    if length < MIN_PLAINTEXT_BYTES or len(padded) != 2 + calc_padded_len(length):
        raise Nip44Error("invalid padding")
    data = padded[2 : 2 + length]
    if len(data) != length:
        raise Nip44Error("invalid padding")
    return data.decode("utf-8")


def _chacha20(key: bytes, nonce12: bytes, data: bytes) -> bytes:
    cipher = Cipher(algorithms.ChaCha20(key, b"\x00\x00\x00\x00" + nonce12), mode=None)
    return cipher.encryptor().update(data)


def encrypt(plaintext: str, conv_key: bytes, nonce: bytes | None = None) -> str:
    nonce = os.urandom(32) if nonce is None else nonce
    chacha_key, chacha_nonce, hmac_key = message_keys(conv_key, nonce)
    ciphertext = _chacha20(chacha_key, chacha_nonce, _pad(plaintext))
    mac = hmac.new(hmac_key, nonce + ciphertext, hashlib.sha256).digest()
    return base64.b64encode(bytes([_VERSION]) + nonce + ciphertext + mac).decode("ascii")


def is_v2_payload_shape(payload: object) -> bool:
    """Cheap shape check the relay applies to memory content (no key needed)."""
    if not isinstance(payload, str) or not _MIN_PAYLOAD_CHARS <= len(payload) <= _MAX_PAYLOAD_CHARS:
        return False
    try:
        decoded = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return False
    return decoded[:1] == bytes([_VERSION])


def decrypt(payload: str, conv_key: bytes) -> str:
    if not payload or payload.startswith("#"):
        raise Nip44Error("unknown encryption version")
    if not _MIN_PAYLOAD_CHARS <= len(payload) <= _MAX_PAYLOAD_CHARS:
        raise Nip44Error("invalid payload length")
    try:
        decoded = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise Nip44Error("invalid base64") from None
    if not _MIN_DECODED_BYTES <= len(decoded) <= _MAX_DECODED_BYTES:
        raise Nip44Error("invalid data length")
    if decoded[0] != _VERSION:
        raise Nip44Error(f"unknown encryption version {decoded[0]}")
    nonce, ciphertext, mac = decoded[1:33], decoded[33:-32], decoded[-32:]
    chacha_key, chacha_nonce, hmac_key = message_keys(conv_key, nonce)
    expected = hmac.new(hmac_key, nonce + ciphertext, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, mac):
        raise Nip44Error("invalid MAC")
    try:
        return _unpad(_chacha20(chacha_key, chacha_nonce, ciphertext))
    except UnicodeDecodeError:
        raise Nip44Error("plaintext is not valid UTF-8") from None
