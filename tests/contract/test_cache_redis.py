"""`RedisCache` against the Cache contract on a real Redis server, plus what only Redis shows.

The server comes from scripts/dev-services/services.sh: $KGRAG_TEST_REDIS_URL (set by
`source .cache/dev-services/env.sh`), else the address that script uses. An unreachable server FAILS these
tests (it never skips them). Every test gets a namespace of its own, removed afterwards, so tests may run
against a Redis that others use. The TTL tests of the contract really sleep (about 3 s in all).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator

import pytest
import redis

from kgrag_adapters.crypto.envelope import EnvelopeCipher
from kgrag_adapters.crypto.kek import KeyRing, new_key
from kgrag_adapters.memory.keys import MemoryKeyStore
from kgrag_adapters.redis import cache as redis_cache_module
from kgrag_adapters.redis.cache import RedisCache
from kgrag_core.answering.sealed_cache import open_answer, seal_answer
from kgrag_testing.contracts.cache import CacheContract

pytestmark = pytest.mark.integration

REDIS_URL = os.environ.get("KGRAG_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
START_HINT = "bash scripts/dev-services/services.sh start redis  (then: source .cache/dev-services/env.sh)"


@pytest.fixture(scope="module")
def client() -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3, socket_timeout=10)
    problem = None
    try:
        conn.ping()
    except redis.RedisError as exc:
        problem = exc
    if problem is not None:  # failed outside the `except`, so the report is the hint, not a chained traceback
        conn.close()
        pytest.fail(f"Redis at {REDIS_URL} is not reachable ({problem}). Start it: {START_HINT}", pytrace=False)
    yield conn
    conn.close()


def namespace_keys(client: redis.Redis, namespace: str) -> list[bytes]:
    return sorted(client.scan_iter(match=f"{namespace}:*", count=1000))


@pytest.fixture
def namespace(client: redis.Redis) -> Iterator[str]:
    name = f"kgrag-test-{uuid.uuid4().hex[:12]}"
    yield name
    keys = namespace_keys(client, name)
    if keys:
        client.unlink(*keys)


@pytest.fixture
def cache(client: redis.Redis, namespace: str) -> RedisCache:
    return RedisCache(client, namespace)


class TestRedisCache(CacheContract):
    pass  # `advance_clock` stays the contract's default, time.sleep: Redis expires entries by its own clock


def test_keys_are_namespaced_and_entries_carry_their_ttl(
    cache: RedisCache, client: redis.Redis, namespace: str
) -> None:
    cache.set("ask:scope-a:0:q", b"v", 60)
    assert namespace_keys(client, namespace) == [f"{namespace}:e:ask:scope-a:0:q".encode()]
    assert 0 < client.ttl(f"{namespace}:e:ask:scope-a:0:q") <= 60
    assert client.get("ask:scope-a:0:q") is None  # nothing outside the namespace


def test_namespaces_are_isolated(client: redis.Redis, namespace: str) -> None:
    other_name = f"{namespace}-2"  # shares the first namespace's name as a string prefix
    one, two = RedisCache(client, namespace), RedisCache(client, other_name)
    try:
        one.set("k", b"one", 60)
        two.set("k", b"two", 60)
        assert (one.get("k"), two.get("k")) == (b"one", b"two")
        one.invalidate_all()
        assert one.get("k") is None
        assert two.get("k") == b"two"  # the sweep did not reach the other namespace
        assert two.generation() == 0
    finally:
        keys = namespace_keys(client, other_name)
        if keys:
            client.unlink(*keys)


def test_invalidate_all_reclaims_memory_in_bounded_batches(
    cache: RedisCache, client: redis.Redis, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_cache_module, "_BATCH", 7)
    with client.pipeline(transaction=False) as pipe:
        for i in range(100):
            pipe.set(f"{namespace}:e:k{i}", b"x", ex=60)
        pipe.execute()
    unlink_sizes: list[int] = []
    real_unlink = client.unlink

    def counting_unlink(*names: str | bytes) -> int:
        unlink_sizes.append(len(names))
        return real_unlink(*names)

    monkeypatch.setattr(client, "unlink", counting_unlink)
    cache.invalidate_all()
    monkeypatch.undo()
    assert sum(unlink_sizes) == 100
    assert max(unlink_sizes) <= 7
    # Only the generation counter is left: the entries' memory is reclaimed, not just made unreachable.
    assert namespace_keys(client, namespace) == [f"{namespace}:gen".encode()]


def test_generation_is_shared_by_every_instance(client: redis.Redis, namespace: str) -> None:
    # Several API replicas share one Redis: an invalidation by one moves the generation for all of them.
    first, second = RedisCache(client, namespace), RedisCache(client, namespace)
    assert first.generation() == second.generation() == 0
    first.set("k", b"x", 60)
    first.invalidate_all()
    assert second.generation() == 1
    assert second.get("k") is None
    second.invalidate_all()
    assert first.generation() == 2


def test_an_invalidation_without_entries_only_moves_the_generation(cache: RedisCache) -> None:
    cache.invalidate_all()
    assert cache.generation() == 1


@pytest.mark.parametrize(
    "namespace_name", ["", "a:b", "ns*", "a b", "ns?", "[ns]", pytest.param("x" * 65, id="too-long")]
)
def test_rejects_a_namespace_that_could_overlap_another(client: redis.Redis, namespace_name: str) -> None:
    with pytest.raises(ValueError, match="namespace"):
        RedisCache(client, namespace_name)


def test_rejects_a_client_that_decodes_responses() -> None:
    decoding = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        with pytest.raises(ValueError, match="decode_responses"):
            RedisCache(decoding)
    finally:
        decoding.close()


def test_connect_owns_its_client_and_sets_timeouts(client: redis.Redis, namespace: str) -> None:
    with RedisCache.connect(REDIS_URL, namespace=namespace) as cache:
        cache.set("k", b"v", 60)
        assert cache.get("k") == b"v"
        kwargs = cache._client.get_connection_kwargs()
        assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 5.0
    assert RedisCache(client, namespace).get("k") == b"v"  # closing the cache closed only its own client


def test_closing_leaves_a_client_passed_in_open(client: redis.Redis, namespace: str) -> None:
    RedisCache(client, namespace).close()
    assert client.ping()


def test_an_unreachable_server_raises() -> None:
    # Port 1 on the loopback refuses at once; the error must surface, not read as a cache miss.
    with RedisCache.connect("redis://127.0.0.1:1/0") as cache, pytest.raises(redis.ConnectionError):
        cache.get("k")


@pytest.mark.parametrize("deleted", ["doc-a", "doc-b", "doc-c"])
def test_a_cached_answer_is_unreadable_once_any_document_it_cites_is_deleted(
    cache: RedisCache, client: redis.Redis, namespace: str, deleted: str
) -> None:
    """An answer is cached sealed under every cited document's key (kgrag_core.answering.sealed_cache): the
    bytes Redis holds (and writes to its RDB/AOF files and replicas) quote nothing, and shredding any one
    cited document's key leaves an entry nobody can open, even a copy taken before the invalidation."""
    cipher = EnvelopeCipher(MemoryKeyStore(), KeyRing([new_key()]))
    secret = "zq" + uuid.uuid4().hex + "0"
    answer = json.dumps({"answer": f"The vault code is {secret}.", "citations": ["doc-a", "doc-b", "doc-c"]})
    for doc_id in ("doc-a", "doc-b", "doc-c"):
        cipher.sealer(doc_id)  # each document has its data key (made by its ingest)
    sealed = seal_answer(cipher, ["doc-c", "doc-a", "doc-b", "doc-a"], answer.encode())
    assert sealed is not None
    cache.set("ask:scope:0:q", sealed, 60)
    raw = client.get(f"{namespace}:e:ask:scope:0:q")
    assert isinstance(raw, bytes) and secret.encode() not in raw and b"vault" not in raw
    copy = cache.get("ask:scope:0:q")
    assert copy is not None and open_answer(cipher, copy) == answer.encode()  # positive control
    assert cipher.shred(deleted)
    assert open_answer(cipher, copy) is None
    assert open_answer(EnvelopeCipher(MemoryKeyStore(), KeyRing([new_key()])), copy) is None  # another ring
