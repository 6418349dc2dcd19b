"""Crypto-shredding ports: per-document data keys, so that deleting a document's key deletes its content.

Every store that keeps a document's text (the document row, chunk texts, evidence quotes, the extraction
cache, cached answers, the raw body in the object store, change events on the bus) keeps it sealed with
that document's data key. The data key is kept only wrapped by a key-encryption key (KEK), and a
compliance deletion destroys it: dead tuples, WAL, log segments and backups then hold ciphertext nobody can
open. See docs/adr/0008-crypto-shredding.md.

Only the interfaces live here (the core does no I/O and no cryptography); the one implementation is
`kgrag_adapters.crypto`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

Sealer = Callable[[bytes], bytes]


@runtime_checkable
class ContentCipher(Protocol):
    """Seals and opens content under its document's data key; destroys the key on deletion."""

    def sealer(self, doc_id: str, *, deterministic: bool = False, create: bool = True) -> Sealer:
        """A function that seals bytes for `doc_id`, creating the document's data key if it has none.

        With `create=False` a document without a key (deleted, or never stored) is CONTENT_SHREDDED
        instead: a copy made from it after it was read (a projection) must not get a fresh key that would
        outlive the deletion.

        Sealing is randomised; `deterministic` seals equal plaintexts of one document (one key) to equal
        values (a synthetic nonce), for columns SQL must compare to skip unchanged rows. It reveals
        equality within the document and nothing else, and shreds like the rest.

        The key is looked up once per call of `sealer` (not per sealed value), fresh from the key store:
        a sealer never seals under a key that another process already destroyed before it was made.
        """
        ...

    def open(self, doc_id: str, sealed: bytes) -> bytes | None:
        """The plaintext, or None when the data key it was sealed under is gone (shredded)."""
        ...

    def shred(self, doc_id: str) -> bool:
        """Destroy the document's data key; True when there was one. Everything sealed under it is lost."""
        ...


def seal_text(sealer: Sealer, text: str) -> bytes:
    return sealer(text.encode("utf-8"))


def open_text(cipher: ContentCipher, doc_id: str, sealed: bytes) -> str | None:
    plain = cipher.open(doc_id, sealed)
    return None if plain is None else plain.decode("utf-8")


@dataclass(frozen=True, slots=True)
class WrappedKey:
    """A document's data key as the key store keeps it: encrypted under the KEK named by `kek_id`.

    `key_id` names the data key itself (a fresh random value per key): sealed values carry it, so a
    value sealed under an earlier key of the same document (deleted, then re-ingested) is told apart.
    """

    doc_id: str
    key_id: bytes
    kek_id: str
    wrapped: bytes


@runtime_checkable
class KeyStore(Protocol):
    """Where wrapped data keys live (PostgreSQL in both runtimes)."""

    def wrapped_key(self, doc_id: str) -> WrappedKey | None: ...

    def add_wrapped_key(self, key: WrappedKey) -> WrappedKey:
        """Store `key` unless the document already has one; return the one stored (a concurrent writer's
        key wins, so two processes never seal one document under two keys)."""
        ...

    def destroy_wrapped_key(self, doc_id: str) -> bool: ...

    def wrapped_keys_not_under(self, kek_id: str, limit: int) -> list[WrappedKey]:
        """Keys wrapped under any KEK other than `kek_id` (what a rotation still has to re-wrap)."""
        ...

    def replace_wrapping(self, keys: Sequence[WrappedKey]) -> int:
        """Re-point existing keys at new wrappings (same doc_id and key_id); return how many changed."""
        ...

    def count_wrapped_keys(self) -> dict[str, int]:
        """Live data keys by the KEK that wraps them."""
        ...


@runtime_checkable
class KeyEncryptionKey(Protocol):
    """Wraps and unwraps data keys. `kek_id` names the key-encryption key, never reveals it."""

    @property
    def kek_id(self) -> str: ...

    def wrap(self, data_key: bytes, *, context: bytes) -> bytes: ...

    def unwrap(self, wrapped: bytes, *, kek_id: str, context: bytes) -> bytes:
        """The data key; raises KeyError when `kek_id` is not a KEK this ring still holds."""
        ...


# --- purges of what must stay plaintext -------------------------------------------------------------


class PurgeStatus(StrEnum):
    PURGED = "purged"  # physically gone from the engine's files (merged / vacuumed / expunged)
    SHREDDED = "shredded"  # only ciphertext remains, and its data key is destroyed
    DELETED = "deleted"  # logically deleted; the engine offers no physical purge on demand
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class StorePurge:
    """What a deletion did to one store, and when: part of the deletion's audit record."""

    store: str
    status: PurgeStatus
    at: datetime | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, str | None]:
        return {
            "store": self.store,
            "status": self.status.value,
            "at": self.at.isoformat() if self.at else None,
            "detail": self.detail,
        }


@runtime_checkable
class Purgeable(Protocol):
    """An index that can physically drop what it logically deleted (segment merge, vacuum, expunge)."""

    @property
    def purge_needs_rewrite(self) -> bool:
        """True when the engine drops a deleted entry's terms only with its whole segment, so the caller
        must first rewrite the live entries (tantivy-py offers no explicit merge)."""
        ...

    def rewrite_scope(self) -> Sequence[str] | None:
        """With `purge_needs_rewrite`: the documents whose live entries share a segment with a deleted entry
        (the caller rewrites just these, so a purge costs what the deletion touched, not the corpus), or
        None when the engine cannot tell (the caller rewrites every live document)."""
        ...

    def purge_deleted(self) -> tuple[bool, str]:
        """Reclaim deleted entries now; return whether none is left in the engine's files, and a short note
        of what it did (and, when something is left, what keeps it)."""
        ...
