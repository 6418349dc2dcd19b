"""In-process result cache: LRU with per-entry TTL and a generation counter.

The HTTP server calls it from several worker threads, so every operation holds one lock (operations are
O(1) dict work, so contention is not a concern).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable


class InMemoryCache:
    def __init__(self, max_entries: int = 10_000, *, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` returns seconds; monotonic so a wall-clock jump cannot expire or revive entries."""
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        # key -> (expires_at, value); order is recency of use, least recent first.
        self._entries: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._generation = 0

    def get(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires_at, value = entry
            if self._clock() >= expires_at:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return value

    def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        if ttl_seconds <= 0:
            # A cache entry that is already expired is a caller bug; Redis rejects it too.
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds}")
        with self._lock:
            self._entries[key] = (self._clock() + ttl_seconds, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                # Evict the least recently used. Expired entries are not swept eagerly: they cost only
                # memory (bounded by max_entries) until a get or this eviction drops them.
                self._entries.popitem(last=False)

    def generation(self) -> int:
        with self._lock:
            return self._generation

    def invalidate_all(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()

    def __len__(self) -> int:
        """Entries held, including expired ones not yet dropped (for tests and stats)."""
        with self._lock:
            return len(self._entries)
