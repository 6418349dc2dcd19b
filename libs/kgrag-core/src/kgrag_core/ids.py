"""Deterministic identifiers.

Every ID is a hash of the inputs that define the thing, so the same input gives the same ID on every
runtime and every replay (invariant 7). Python's `hash()` is salted per process and is never used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

_SEP = "\x1f"  # unit separator: cannot appear in the parts we hash without being deliberate


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_hash(data: bytes) -> str:
    return "sha256:" + sha256_hex(data)


def _digest(*parts: str, length: int = 32) -> str:
    return sha256_hex(_SEP.join(parts).encode("utf-8"))[:length]


def document_id_for(source: str, uri: str) -> str:
    """ID for a document whose source did not give one."""
    return "doc_" + _digest(source, uri)


def chunk_id_for(doc_id: str, chunk_hash: str, occurrence: int = 0) -> str:
    """A chunk's ID: its document, its text's hash, and which repeat of that text it is.

    Byte offsets are deliberately left out: an edit in one section shifts every later offset, and
    evidence links keyed by chunk ID must survive edits elsewhere in the document. The offsets are
    stored with the chunk and updated by the upsert.
    """
    return "ch_" + _digest(doc_id, chunk_hash, str(occurrence))


def acl_class_id_for(principals: Iterable[str]) -> str:
    """One ID per distinct set of principals, independent of order and duplicates.

    The set is encoded injectively before hashing — a JSON array of the sorted names, where every
    character of a name is quoted or escaped — so no name can contain a separator that splits it into
    two principals ("finance\x1fgroup:zz" is not ["finance", "zz"]). 128 bits of SHA-256: a birthday
    collision between two chosen reader sets is out of reach, and the store refuses one anyway
    (ACL_CLASS_CONFLICT). IDs of the earlier format ("acl_" + 16 hex, a joined string) stay readable;
    docs/security.md, section 5, says how they are handled.
    """
    return "acl_" + sha256_hex(principal_set_encoding(principals).encode("ascii"))[:32]


def principal_set_encoding(principals: Iterable[str]) -> str:
    """The canonical, decodable (hence injective) text of a principal set: a compact ASCII JSON array."""
    return json.dumps(sorted(set(principals)), ensure_ascii=True, separators=(",", ":"))


def stable_partition(key: str, partitions: int) -> int:
    """Partition for a key, stable across processes and machines (unlike `hash()`)."""
    if partitions <= 0:
        raise ValueError("partitions must be positive")
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big") % partitions
