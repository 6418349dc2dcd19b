"""Envelope encryption of document content: AES-256-GCM under a per-document data key.

A sealed value is `0x01 | key_id (16) | nonce (12) | ciphertext+tag`, authenticated together with the
document ID, so a value copied into another document's row does not open. `0x00 | plaintext` is the
unencrypted form (`PlaintextCipher`, the benchmark's baseline, and rows written before migration 0009);
`open` reads both, so turning encryption on needs no rewrite of old rows, only a re-ingest to seal them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time
from collections import OrderedDict

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.shredding import KeyEncryptionKey, KeyStore, Sealer, WrappedKey

SEALED = 0x01
PLAIN = 0x00
_KEY_ID_BYTES = 16
_NONCE_BYTES = 12
_HEADER = 1 + _KEY_ID_BYTES + _NONCE_BYTES


def key_context(doc_id: str, key_id: bytes) -> bytes:
    """What a wrapping and every sealed value of one data key are bound to."""
    return doc_id.encode("utf-8") + b"\x00" + key_id


class EnvelopeCipher:
    """ContentCipher over a KeyStore and a KEK ring; the only code in kgrag that encrypts content.

    Opened data keys are cached in memory (bounded, and only for `cache_ttl_s`), so reading a document's
    chunks unwraps its key once. Sealing never uses the cache: `sealer` reads the key store, so a key that
    another process destroyed is never used to seal new content.
    """

    def __init__(
        self, keys: KeyStore, kek: KeyEncryptionKey, *, cache_size: int = 4096, cache_ttl_s: float = 60.0
    ) -> None:
        self._keys = keys
        self._kek = kek
        self._cache: OrderedDict[tuple[str, bytes], tuple[float, AESGCM]] = OrderedDict()
        self._cache_size = cache_size
        self._ttl = cache_ttl_s
        self._lock = threading.Lock()

    def sealer(self, doc_id: str, *, deterministic: bool = False, create: bool = True) -> Sealer:
        stored = self._keys.wrapped_key(doc_id)
        if stored is None and not create:
            raise KgragError(
                ErrorCode.CONTENT_SHREDDED,
                f"document {doc_id!r} has no data key (deleted): nothing of it is sealed again",
                hint="its copies go with the re-projection its deletion triggers",
            )
        if stored is None:
            key_id = os.urandom(_KEY_ID_BYTES)
            data_key = AESGCM.generate_key(bit_length=256)
            wrapped = self._kek.wrap(data_key, context=key_context(doc_id, key_id))
            stored = self._keys.add_wrapped_key(WrappedKey(doc_id, key_id, self._kek.kek_id, wrapped))
        aead = self._unwrap(stored)
        if aead is None:
            raise RuntimeError(f"the data key of {doc_id!r} is wrapped under a KEK this process does not hold")
        prefix = bytes([SEALED]) + stored.key_id
        aad = key_context(doc_id, stored.key_id)
        siv_key = self._siv_key(stored) if deterministic else b""

        def seal(plaintext: bytes) -> bytes:
            if deterministic:
                # Synthetic nonce: a MAC of the plaintext, so a nonce repeats only with its plaintext.
                nonce = hmac.new(siv_key, plaintext, hashlib.sha256).digest()[:_NONCE_BYTES]
            else:
                nonce = os.urandom(_NONCE_BYTES)
            return prefix + nonce + aead.encrypt(nonce, plaintext, aad)

        return seal

    def _siv_key(self, stored: WrappedKey) -> bytes:
        data_key = self._kek.unwrap(
            stored.wrapped, kek_id=stored.kek_id, context=key_context(stored.doc_id, stored.key_id)
        )
        return hmac.new(data_key, b"kgrag synthetic nonce v1", hashlib.sha256).digest()

    def open(self, doc_id: str, sealed: bytes) -> bytes | None:
        if not sealed:
            raise ValueError("not a sealed value: empty")
        if sealed[0] == PLAIN:
            return bytes(sealed[1:])
        if sealed[0] != SEALED or len(sealed) < _HEADER:
            raise ValueError("not a sealed value")
        key_id = bytes(sealed[1 : 1 + _KEY_ID_BYTES])
        aead = self._aead(doc_id, key_id)
        if aead is None:
            return None
        nonce = bytes(sealed[1 + _KEY_ID_BYTES : _HEADER])
        try:
            return aead.decrypt(nonce, bytes(sealed[_HEADER:]), key_context(doc_id, key_id))
        except InvalidTag as err:
            raise ValueError(f"a sealed value of {doc_id!r} failed authentication (tampered or misfiled)") from err

    def shred(self, doc_id: str) -> bool:
        with self._lock:
            for cached in [k for k in self._cache if k[0] == doc_id]:
                del self._cache[cached]
        return self._keys.destroy_wrapped_key(doc_id)

    def _aead(self, doc_id: str, key_id: bytes) -> AESGCM | None:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get((doc_id, key_id))
            if hit is not None and now - hit[0] < self._ttl:
                self._cache.move_to_end((doc_id, key_id))
                return hit[1]
        stored = self._keys.wrapped_key(doc_id)
        if stored is None or stored.key_id != key_id:
            return None  # shredded (or a value of an earlier key of a re-ingested document)
        aead = self._unwrap(stored)
        if aead is not None:
            with self._lock:
                self._cache[(doc_id, key_id)] = (now, aead)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return aead

    def _unwrap(self, stored: WrappedKey) -> AESGCM | None:
        try:
            data_key = self._kek.unwrap(
                stored.wrapped, kek_id=stored.kek_id, context=key_context(stored.doc_id, stored.key_id)
            )
        except KeyError:
            # The ring no longer holds the KEK this key was wrapped under (retired after a rotation): the
            # copy is unreadable by design, like a shredded key, and the caller gets "cannot open".
            return None
        return AESGCM(data_key)


class PlaintextCipher:
    """No encryption (KGRAG_CONTENT_ENCRYPTION=false): the same-run baseline of the benchmark, nothing else.

    Deleting a document then shreds nothing; its text stays readable in dead tuples, WAL and backups.
    """

    def __init__(self, keys: KeyStore | None = None) -> None:
        self._keys = keys

    def sealer(self, doc_id: str, *, deterministic: bool = False, create: bool = True) -> Sealer:
        return _plain

    def open(self, doc_id: str, sealed: bytes) -> bytes | None:
        if not sealed or sealed[0] != PLAIN:
            return None  # sealed by an encrypting process; this one holds no keys
        return bytes(sealed[1:])

    def shred(self, doc_id: str) -> bool:
        return self._keys.destroy_wrapped_key(doc_id) if self._keys is not None else False


def _plain(plaintext: bytes) -> bytes:
    return bytes([PLAIN]) + plaintext
