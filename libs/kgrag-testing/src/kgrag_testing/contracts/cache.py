"""Contract suite for `Cache` adapters (in-process now, Redis later).

Subclass `CacheContract` in a `Test*` class and provide a `cache` fixture that yields a fresh, empty
cache. Time: the suite moves time forward through the `advance_clock` fixture, a callable taking seconds.
The default sleeps for real, which suits a server-side TTL (Redis); an adapter with an injectable clock
overrides the fixture to move a fake clock, so its tests take no time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kgrag_core.ports import Cache

AdvanceClock = Callable[[float], None]


class FakeClock:
    """A monotonic clock for adapters that accept one: `clock()` reads it, `advance()` moves it."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a monotonic clock never goes back")
        self.now += seconds


class CacheContract:
    @pytest.fixture
    def advance_clock(self) -> AdvanceClock:
        return time.sleep

    def test_implements_the_port(self, cache: Cache) -> None:
        assert isinstance(cache, Cache)

    def test_missing_key(self, cache: Cache) -> None:
        assert cache.get("missing") is None

    def test_set_then_get(self, cache: Cache) -> None:
        cache.set("ask:scope-1:0:abc", b'{"answer": 42}', 60)
        cache.set("binary", bytes(range(256)), 60)
        cache.set("empty", b"", 60)
        assert cache.get("ask:scope-1:0:abc") == b'{"answer": 42}'
        assert cache.get("binary") == bytes(range(256))
        assert cache.get("empty") == b""  # a cached empty value is a hit, not a miss

    def test_keys_are_distinct(self, cache: Cache) -> None:
        # Keys carry the caller's ACL scope: two scopes must never see each other's entry.
        cache.set("ask:scope-a:0:q", b"for a", 60)
        cache.set("ask:scope-b:0:q", b"for b", 60)
        assert cache.get("ask:scope-a:0:q") == b"for a"
        assert cache.get("ask:scope-b:0:q") == b"for b"
        assert cache.get("ask:scope-a:0:") is None
        assert cache.get("ask:scope-a:0:q ") is None

    def test_set_overwrites(self, cache: Cache) -> None:
        cache.set("k", b"old", 60)
        cache.set("k", b"new", 60)
        assert cache.get("k") == b"new"

    def test_entry_expires_after_its_ttl(self, cache: Cache, advance_clock: AdvanceClock) -> None:
        cache.set("short", b"x", 1)
        cache.set("long", b"y", 60)
        advance_clock(0.4)
        assert cache.get("short") == b"x"
        advance_clock(1.0)
        assert cache.get("short") is None
        assert cache.get("long") == b"y"

    def test_overwrite_restarts_the_ttl(self, cache: Cache, advance_clock: AdvanceClock) -> None:
        cache.set("k", b"old", 1)
        advance_clock(0.6)
        cache.set("k", b"new", 2)
        advance_clock(0.8)  # 1.4 s after the first set: past its TTL, within the second's
        assert cache.get("k") == b"new"

    @pytest.mark.parametrize("ttl", [0, -1])
    def test_rejects_a_ttl_that_is_not_positive(self, cache: Cache, ttl: int) -> None:
        with pytest.raises(ValueError, match="ttl"):
            cache.set("k", b"x", ttl)
        assert cache.get("k") is None

    def test_generation_moves_only_on_invalidation(self, cache: Cache) -> None:
        start = cache.generation()
        cache.set("k", b"x", 60)
        cache.get("k")
        assert cache.generation() == start
        cache.invalidate_all()
        after_one = cache.generation()
        assert after_one > start
        cache.invalidate_all()
        assert cache.generation() > after_one

    def test_invalidate_all_drops_every_entry(self, cache: Cache) -> None:
        for i in range(20):
            cache.set(f"k{i}", b"x", 60)
        cache.invalidate_all()
        assert all(cache.get(f"k{i}") is None for i in range(20))
        cache.set("k0", b"fresh", 60)  # the cache keeps working afterwards
        assert cache.get("k0") == b"fresh"
