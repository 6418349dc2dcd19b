"""`CommunitySource` in PostgreSQL: what the community projection (kgrag_core.handlers.community_projection)
is synced from. Read-only over migration 0027's tables; the rows are `PostgresCommunityStore`'s."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import LiteralString

from kgrag_adapters.postgres.communities import _COLUMNS, _community
from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_core.communities.model import Community
from kgrag_core.handlers.community_projection import CommunityHeader

_HEADERS: LiteralString = (
    "SELECT community_id, level, parent_id, stale, graph_version, content_hash FROM kg_communities"
    " ORDER BY level, community_id"
)


class PostgresCommunitySource:
    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def community_headers(self) -> list[CommunityHeader]:
        with self._pool as conn:
            rows = conn.execute(_HEADERS).fetchall()
        return [
            CommunityHeader(str(r[0]), int(r[1]), None if r[2] is None else str(r[2]), bool(r[3]), int(r[4]), str(r[5]))
            for r in rows
        ]

    def communities_by_id(self, community_ids: Sequence[str]) -> list[Community]:
        if not community_ids:
            return []
        sql = "SELECT " + _COLUMNS + " FROM kg_communities k WHERE k.community_id = ANY(%s) ORDER BY k.level"
        with self._pool as conn:
            rows = conn.execute(sql, (list(community_ids),)).fetchall()
        return [_community(r) for r in rows]

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """A transaction-level advisory lock on this thread's leased connection, held until the block ends
        (the reads inside it run on the same connection: the pool's leases are re-entrant per thread)."""
        with self._pool as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (name,))
            yield
