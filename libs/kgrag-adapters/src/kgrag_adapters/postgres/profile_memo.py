"""Opened entity profiles kept between resolution passes, each under a fingerprint of the sealed rows it was
opened from (issue 10: every incremental pass re-read and re-opened hundreds of unchanged profiles).

A profile is a function of its rows (the entity row, its mentions, claims, relations and scopes as
`PostgresGraphStore.profiles` reads them, sealed) and of the documents' keys. The rows are still read on
every pass (a read is cheap); only the opening and assembling is skipped when an entity's rows are exactly
those of its kept profile, so a kept profile is never stale: a new mention, a merge of a neighbour, an ACL
or status change of one of its documents changes the rows. A destroyed key goes with a deleted document,
which leaves the rows too.

Plaintext kept in memory must not outlive a deletion: an entry records the documents its texts came from,
and `forget_documents` (called with every incremental pass's documents, which include deleted ones) drops
every entry opened from any of them; a full pass keeps only the entities it read. Bounded: the least
recently used entries go first.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_MAX_ENTRIES = 20_000  # a few KB each: tens of MB at most, per memo


def fingerprint(rows: object) -> bytes:
    """A digest of an entity's raw rows (tuples of str, int, bytes, lists and None: `repr` is exact for
    them)."""
    return hashlib.blake2b(repr(rows).encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class _Entry(Generic[T]):
    fingerprint: bytes
    profile: T
    doc_ids: frozenset[str]


class ProfileMemo(Generic[T]):
    """Profiles (an entity's, or an entity's in one document) by key: the entity id, or entity and document."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry[T]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str, print_: bytes) -> T | None:
        """The kept profile if it was opened from exactly these rows."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.fingerprint != print_:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry.profile

    def put(self, key: str, profile: T, print_: bytes, doc_ids: Iterable[str]) -> None:
        with self._lock:
            self._entries[key] = _Entry(print_, profile, frozenset(doc_ids))
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def forget_documents(self, doc_ids: Sequence[str]) -> int:
        """Drop every profile opened from any of these documents; how many were dropped."""
        gone = frozenset(doc_ids)
        if not gone:
            return 0
        with self._lock:
            stale = [entity for entity, entry in self._entries.items() if not entry.doc_ids.isdisjoint(gone)]
            for entity in stale:
                del self._entries[entity]
        return len(stale)

    def documents_of(self, key: str) -> frozenset[str]:
        """The documents a kept profile was opened from (empty when none is kept)."""
        with self._lock:
            entry = self._entries.get(key)
            return entry.doc_ids if entry is not None else frozenset()

    def keep_only(self, keys: Iterable[str]) -> None:
        """Forget every key not among these (after a full pass: the other entities no longer exist)."""
        keep = set(keys)
        with self._lock:
            for entity in [e for e in self._entries if e not in keep]:
                del self._entries[entity]
