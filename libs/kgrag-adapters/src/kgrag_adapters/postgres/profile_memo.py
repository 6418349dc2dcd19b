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

from kgrag_core.graph.model import EntityProfile

DEFAULT_MAX_ENTRIES = 50_000


def fingerprint(rows: object) -> bytes:
    """A digest of an entity's raw rows (tuples of str, int, bytes, lists and None: `repr` is exact for
    them)."""
    return hashlib.blake2b(repr(rows).encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class _Entry:
    fingerprint: bytes
    profile: EntityProfile
    doc_ids: frozenset[str]


class ProfileMemo:
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, entity_id: str, print_: bytes) -> EntityProfile | None:
        """The kept profile if it was opened from exactly these rows."""
        with self._lock:
            entry = self._entries.get(entity_id)
            if entry is None or entry.fingerprint != print_:
                self.misses += 1
                return None
            self._entries.move_to_end(entity_id)
            self.hits += 1
            return entry.profile

    def put(self, profile: EntityProfile, print_: bytes, doc_ids: Iterable[str]) -> None:
        with self._lock:
            self._entries[profile.entity_id] = _Entry(print_, profile, frozenset(doc_ids))
            self._entries.move_to_end(profile.entity_id)
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

    def keep_only(self, entity_ids: Iterable[str]) -> None:
        """Forget every entity not among these (after a full pass: the rest no longer exist)."""
        keep = set(entity_ids)
        with self._lock:
            for entity in [e for e in self._entries if e not in keep]:
                del self._entries[entity]
