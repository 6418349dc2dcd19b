"""Key-encryption keys: a ring of AES-256 keys, the newest of which wraps, any of which unwraps.

A KEK's id is derived from the key itself (an HMAC under a fixed label), so an id names one key without
revealing it and two processes given the same secret agree on its id without a registry. Rotation adds
a new KEK in front of the ring, re-wraps every data key under it (`kgrag_adapters.crypto.rotation`) and
then retires the old one; once the old KEK is destroyed, every copy of a data key wrapped under it (in a
dead tuple, a WAL segment or a backup) is unreadable too.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kgrag_core.errors import ErrorCode, KgragError

KEY_BYTES = 32
_NONCE_BYTES = 12
_ID_LABEL = b"kgrag kek id v1"
# Key files in embedded mode: <data_dir>/keys/kek-<seq>.key, one base64 line each. The highest
# sequence number is the primary (it wraps new data keys); the others only unwrap until rotated away.
KEK_FILE_PREFIX = "kek-"
KEK_FILE_SUFFIX = ".key"


def kek_id_of(key: bytes) -> str:
    return "kek_" + hmac.new(key, _ID_LABEL, hashlib.sha256).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class _Kek:
    kek_id: str
    aead: AESGCM


class KeyRing:
    """The KEKs a process holds. Wraps with the first; unwraps with whichever the wrapping names."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("a key ring needs at least one key-encryption key")
        ring: list[_Kek] = []
        for key in keys:
            if len(key) != KEY_BYTES:
                raise KgragError(
                    ErrorCode.CONFIGURATION_INVALID,
                    f"A key-encryption key must be {KEY_BYTES} bytes, not {len(key)}.",
                    hint="Generate one with: python -c 'import os, base64; print(base64.b64encode(os.urandom(32)))'",
                )
            ring.append(_Kek(kek_id_of(key), AESGCM(key)))
        self._primary = ring[0]
        self._by_id = {k.kek_id: k for k in ring}

    @property
    def kek_id(self) -> str:
        return self._primary.kek_id

    @property
    def kek_ids(self) -> list[str]:
        return list(self._by_id)

    def wrap(self, data_key: bytes, *, context: bytes) -> bytes:
        nonce = os.urandom(_NONCE_BYTES)
        return nonce + self._primary.aead.encrypt(nonce, data_key, context)

    def unwrap(self, wrapped: bytes, *, kek_id: str, context: bytes) -> bytes:
        kek = self._by_id[kek_id]  # KeyError: a retired KEK, so the data key is unrecoverable here
        return kek.aead.decrypt(wrapped[:_NONCE_BYTES], wrapped[_NONCE_BYTES:], context)


def decode_key(text: str) -> bytes:
    """A KEK from its base64 text form (what key files and KGRAG_KEK hold)."""
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as err:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID, "A key-encryption key is not valid base64.", hint="See docs/operations.md."
        ) from err
    return key


def encode_key(key: bytes) -> str:
    return base64.b64encode(key).decode("ascii")


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def kek_files(key_dir: Path) -> list[Path]:
    """The key files of a key folder, primary (highest sequence) first."""
    found: list[tuple[int, Path]] = []
    for path in key_dir.glob(f"{KEK_FILE_PREFIX}*{KEK_FILE_SUFFIX}"):
        seq = path.name.removeprefix(KEK_FILE_PREFIX).removesuffix(KEK_FILE_SUFFIX)
        if seq.isdigit():
            found.append((int(seq), path))
    return [p for _, p in sorted(found, reverse=True)]


def write_key_file(key_dir: Path, key: bytes) -> Path:
    """Write a new primary KEK file, readable by its owner only (created 0600, never world-readable)."""
    key_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    existing = kek_files(key_dir)
    seq = int(existing[0].name.removeprefix(KEK_FILE_PREFIX).removesuffix(KEK_FILE_SUFFIX)) + 1 if existing else 1
    path = key_dir / f"{KEK_FILE_PREFIX}{seq:06d}{KEK_FILE_SUFFIX}"
    # O_EXCL: two processes creating the first key at once cannot both win and silently differ.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(encode_key(key) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return path


def file_key_ring(key_dir: Path) -> KeyRing:
    """The ring from a key folder, creating the first KEK when the folder has none (embedded first start)."""
    files = kek_files(key_dir)
    if not files:
        # FileExistsError: another process created it first; read theirs.
        with contextlib.suppress(FileExistsError):
            write_key_file(key_dir, new_key())
        files = kek_files(key_dir)
    for path in files:
        if path.stat().st_mode & 0o077:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                f"The key file {path} is readable by other users.",
                hint=f"Run: chmod 600 {path}",
            )
    return KeyRing([decode_key(p.read_text(encoding="ascii")) for p in files])


def secret_key_ring(primary: str, previous: Sequence[str] = ()) -> KeyRing:
    """The ring from settings (distributed mode): KGRAG_KEK, then KGRAG_KEK_PREVIOUS while rotating."""
    return KeyRing([decode_key(primary), *(decode_key(p) for p in previous if p.strip())])


_EPHEMERAL: list[KeyRing] = []


def ephemeral_key_ring() -> KeyRing:
    """One random KEK per process, never written anywhere: for tests and one-process tools only.

    Content sealed under it cannot be opened by another process or after this one exits.
    """
    if not _EPHEMERAL:
        _EPHEMERAL.append(KeyRing([new_key()]))
    return _EPHEMERAL[0]
