"""`Cache` on a Redis server: the distributed twin of `kgrag_adapters.memory.cache.InMemoryCache`.

What it caches: query results (search hits, answers), as opaque bytes. The keys are built by the
application and ALREADY include the caller's ACL scope and the current `generation()`, e.g.
`ask:<acl scope hash>:<generation>:<query hash>`; this adapter never adds, checks or strips a scope, so
two callers share an entry only if the application gave them the same key. Never build a key without
the scope: an entry would then be served to a caller who may not read what it was computed from.

Layout, for a namespace `ns` (one per deployment/environment sharing a Redis):

    ns:gen       the generation counter (an integer string; missing reads as 0), never expires
    ns:e:<key>   one entry: the value bytes, with an expiry of `ttl_seconds` (SET ... EX)

`invalidate_all()` runs on any change of the corpus or the ACLs. It first INCRs `ns:gen`: every caller,
in every process, then builds new keys, so old entries are unreachable at once (atomically, cluster-wide)
whatever happens next. It then reclaims their memory: it walks `ns:e:*` with SCAN (never KEYS, which
blocks the server) and UNLINKs (deletes in a background thread on the server) what it finds in batches
of at most `_BATCH` keys, so every round trip is bounded. Entries written concurrently may survive the
sweep or be deleted by it: either way they hold the new generation (a miss at worst) or an old,
unreachable one that their TTL removes.

Deployment notes: values are bytes, so the client must not decode responses. Give a cache Redis a
`volatile-*` maxmemory policy (`volatile-lru`/`volatile-ttl`): entries all have a TTL and are evicted,
while `ns:gen`, which has none, never is (an evicted counter would restart from 0). This adapter sends
UNLINK with several keys per call, so it targets a standalone Redis (or a primary with replicas), not
Redis Cluster. Server errors (connection refused, timeouts) propagate: whether a cache outage fails a
query or degrades to a miss is the caller's decision.
"""

from __future__ import annotations

import re
from typing import Self

import redis

from kgrag_adapters.lifecycle import Closeable

__all__ = ["RedisCache"]

# Keys per SCAN round trip (a hint to the server) and per UNLINK call.
_BATCH = 500
# Namespaces never contain ':' or glob characters, so `ns:e:*` matches no other namespace's keys and the
# SCAN pattern needs no escaping ("kgrag" and "kgrag2", or "a" and "a:e", cannot overlap).
_NAMESPACE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# Used by `connect`; a `socket_timeout=`/`socket_connect_timeout=` query parameter in the URL wins.
_SOCKET_TIMEOUT_S = 5.0


class RedisCache(Closeable):
    """A result cache in Redis. The application's keys must include the caller's ACL scope."""

    def __init__(self, client: redis.Redis, namespace: str = "kgrag") -> None:
        """Use `client` (which must return bytes, i.e. `decode_responses=False`) under `namespace`."""
        if not _NAMESPACE.fullmatch(namespace):
            raise ValueError(f"invalid cache namespace {namespace!r}: use 1-64 of A-Z a-z 0-9 _ . -")
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("the Redis client must have decode_responses=False: cached values are bytes")
        self._client = client
        self._owns_client = False
        self.namespace = namespace
        self._generation_key = f"{namespace}:gen"
        self._entry_prefix = f"{namespace}:e:"

    @classmethod
    def connect(cls, url: str, *, namespace: str = "kgrag") -> Self:
        """Open a client on `url` (`redis://[:password@]host:port/db`, `rediss://` for TLS).

        The client is owned by the cache: `close()` closes it. No round trip happens here; the first
        operation connects (and raises `redis.ConnectionError` if the server is unreachable).
        """
        client = redis.Redis.from_url(url, socket_timeout=_SOCKET_TIMEOUT_S, socket_connect_timeout=_SOCKET_TIMEOUT_S)
        try:
            cache = cls(client, namespace)
        except BaseException:
            client.close()
            raise
        cache._owns_client = True
        return cache

    def get(self, key: str) -> bytes | None:
        value = self._client.get(self._entry_key(key))
        if value is None or isinstance(value, bytes):
            return value
        raise TypeError(f"expected bytes from Redis, got {type(value).__name__}")

    def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        if ttl_seconds <= 0:
            # Redis rejects `EX 0` too, but with a server error: fail before the round trip, like the twin.
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds}")
        self._client.set(self._entry_key(key), value, ex=ttl_seconds)

    def generation(self) -> int:
        raw = self._client.get(self._generation_key)
        if raw is None:
            return 0
        if not isinstance(raw, bytes):
            raise TypeError(f"expected bytes from Redis, got {type(raw).__name__}")
        return int(raw)

    def invalidate_all(self) -> None:
        """Move the generation, then delete this namespace's entries (SCAN + UNLINK in bounded batches)."""
        self._client.incr(self._generation_key)
        batch: list[bytes] = []
        for found in self._client.scan_iter(match=f"{self._entry_prefix}*", count=_BATCH):
            batch.append(found)
            if len(batch) >= _BATCH:
                self._client.unlink(*batch)
                batch.clear()
        if batch:
            self._client.unlink(*batch)

    def close(self) -> None:
        """Close the client if `connect` opened it; a client passed in stays its owner's to close."""
        if self._owns_client:
            self._client.close()

    def _entry_key(self, key: str) -> str:
        return self._entry_prefix + key
