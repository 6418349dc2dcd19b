"""InMemoryCache against the Cache contract, plus its own LRU bound and thread safety."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from kgrag_adapters.memory.cache import InMemoryCache
from kgrag_testing.contracts.cache import AdvanceClock, CacheContract, FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


class TestInMemoryCache(CacheContract):
    @pytest.fixture
    def cache(self, clock: FakeClock) -> InMemoryCache:
        return InMemoryCache(clock=clock)

    @pytest.fixture
    def advance_clock(self, clock: FakeClock) -> AdvanceClock:
        return clock.advance


def test_expires_exactly_at_the_ttl(clock: FakeClock) -> None:
    cache = InMemoryCache(clock=clock)
    cache.set("k", b"x", 10)
    clock.advance(9.999)
    assert cache.get("k") == b"x"
    clock.advance(0.001)
    assert cache.get("k") is None
    assert len(cache) == 0  # the expired entry was dropped, not just hidden


def test_evicts_the_least_recently_used(clock: FakeClock) -> None:
    cache = InMemoryCache(max_entries=3, clock=clock)
    for key in ("a", "b", "c"):
        cache.set(key, key.encode(), 60)
    assert cache.get("a") == b"a"  # "a" is now the most recently used; "b" the least
    cache.set("d", b"d", 60)
    assert cache.get("b") is None
    assert [cache.get(k) for k in ("a", "c", "d")] == [b"a", b"c", b"d"]
    assert len(cache) == 3


def test_overwriting_counts_as_use(clock: FakeClock) -> None:
    cache = InMemoryCache(max_entries=2, clock=clock)
    cache.set("a", b"1", 60)
    cache.set("b", b"1", 60)
    cache.set("a", b"2", 60)
    cache.set("c", b"1", 60)
    assert cache.get("b") is None
    assert cache.get("a") == b"2"


def test_needs_room_for_an_entry() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        InMemoryCache(max_entries=0)


def test_uses_the_monotonic_clock_by_default() -> None:
    cache = InMemoryCache()
    cache.set("k", b"x", 60)
    assert cache.get("k") == b"x"


def test_threads_share_one_cache_safely() -> None:
    cache = InMemoryCache(max_entries=50)
    start = threading.Barrier(8, timeout=30)

    def hammer(worker: int) -> None:
        start.wait()
        for i in range(2_000):
            key = f"k{(worker * 7 + i) % 80}"
            cache.set(key, key.encode(), 60)
            assert cache.get(key) in (None, key.encode())  # evicted or invalidated meanwhile, never wrong
            if i % 500 == 0:
                cache.invalidate_all()

    with ThreadPoolExecutor(max_workers=8) as pool:
        for future in [pool.submit(hammer, w) for w in range(8)]:
            future.result()  # re-raises a worker's failure here
    assert len(cache) <= 50
    assert cache.generation() == 8 * 4
