"""`VectorIndex` on Qdrant Edge: an in-process shard in a local directory, one point per chunk.

The caller's readable ACL classes are a payload filter inside the engine's search (backed by a keyword
payload index), so denied chunks never take a place in the top-k.

The shard keeps its write-ahead log enabled: the engine then holds an exclusive lock on the directory,
so one process (and one instance) owns a path at a time; another process loads it once this one has
closed it. Every upsert/delete is flushed before it returns, so nothing acknowledged is lost on a crash.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from kgrag_adapters.lifecycle import Closeable
from kgrag_core.filters import SearchFilters
from kgrag_core.retrieval.ties import top_k_breaking_ties_by_id
from kgrag_core.search import RouteHit, VectorPoint

MAX_LIMIT = 1000
# Ties at the cut-off are resolved by fetching further; this bounds that extra work.
_MAX_FETCH = 4 * MAX_LIMIT
_WRITE_BATCH = 256
_SCROLL_PAGE = 512
# Point IDs on disk are derived from this namespace: changing it orphans every existing point.
_POINT_NAMESPACE = uuid.UUID("bc3c92c1-6b58-5074-a3d6-6ab9ce4a06ad")
_INDEXED_FIELDS = ("acl_class_id", "doc_id", "source")
_DATETIME_FIELDS = ("doc_time",)  # the document date, filtered on by SearchFilters


def point_id_for(chunk_id: str) -> str:
    """The engine's point ID for a chunk (the engine accepts only integers and UUIDs)."""
    return str(uuid.uuid5(_POINT_NAMESPACE, chunk_id))


class EdgeVectorIndex(Closeable):
    """Cosine-similarity index of chunk vectors in a Qdrant Edge shard at `path`."""

    def __init__(self, path: Path, dimension: int) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self._path = Path(path)
        self._dimension = dimension
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine))
        if _holds_shard(self._path):
            # Passing the config makes the engine reject a shard built for another dimension.
            shard = qe.EdgeShard.load(str(self._path), config)
        else:
            shard = qe.EdgeShard.create(str(self._path), config)
        try:
            # Idempotent, and repairs shards written before an index existed.
            for field in _INDEXED_FIELDS:
                shard.update(qe.UpdateOperation.create_field_index(field, qe.KeywordIndexParams()))
            for field in _DATETIME_FIELDS:
                shard.update(qe.UpdateOperation.create_field_index(field, qe.DatetimeIndexParams()))
        except BaseException:
            shard.close()  # otherwise the directory lock lingers until garbage collection
            raise
        self._shard: qe.EdgeShard | None = shard

    @property
    def path(self) -> Path:
        return self._path

    @property
    def dimension(self) -> int:
        return self._dimension

    # --- VectorIndex -------------------------------------------------------------------------------

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        # Validate everything first so a bad point cannot leave a half-applied call behind.
        prepared = [qe.Point(point_id_for(p.chunk_id), self._checked_vector(p.vector), _payload(p)) for p in points]
        if not prepared:
            return
        shard = self._live()
        for start in range(0, len(prepared), _WRITE_BATCH):
            shard.update(qe.UpdateOperation.upsert_points(prepared[start : start + _WRITE_BATCH]))
        shard.flush()

    def delete(self, chunk_ids: Sequence[str]) -> None:
        _reject_bare_string(chunk_ids, "chunk_ids")
        ids: list[qe.PointId] = [point_id_for(c) for c in sorted(set(chunk_ids))]
        if not ids:
            return
        shard = self._live()
        for start in range(0, len(ids), _WRITE_BATCH):
            shard.update(qe.UpdateOperation.delete_points(ids[start : start + _WRITE_BATCH]))
        shard.flush()

    # --- Purgeable (ADR 0008) -----------------------------------------------------------------------

    @property
    def purge_needs_rewrite(self) -> bool:
        return False

    def rewrite_scope(self) -> list[str]:
        return []  # the purge needs no rewrite

    def purge_deleted(self) -> tuple[bool, str]:
        """Run the engine's optimizer now: its vacuum rewrites segments whose points were deleted."""
        shard = self._live()
        shard.optimize()
        shard.flush()
        return True, "optimizer (vacuum) run"

    def search(
        self,
        vector: Sequence[float],
        acl_class_ids: Sequence[str],
        limit: int,
        *,
        filters: SearchFilters | None = None,
    ) -> list[RouteHit]:
        check_limit(limit)
        query_vector = self._checked_vector(vector)
        _reject_bare_string(acl_class_ids, "acl_class_ids")
        if not acl_class_ids:
            return []
        shard = self._live()
        conditions: list[
            qe.FieldCondition
            | qe.IsEmptyCondition
            | qe.IsNullCondition
            | qe.HasIdCondition
            | qe.HasVectorCondition
            | qe.NestedCondition
            | qe.Filter
        ] = [qe.FieldCondition(key="acl_class_id", match=qe.MatchAny(any=sorted(set(acl_class_ids))))]
        if filters is not None and filters.sources:
            conditions.append(qe.FieldCondition(key="source", match=qe.MatchAny(any=list(filters.sources))))
        bounds = payload_time_bounds(filters)
        if bounds is not None:
            conditions.append(qe.FieldCondition(key="doc_time", range=qe.RangeDateTime(**bounds)))
        acl_filter = qe.Filter(must=conditions)

        def fetch(size: int) -> list[tuple[str, float]]:
            found = shard.query(
                qe.QueryRequest(
                    limit=size,
                    query=qe.Query.Nearest(query_vector),
                    filter=acl_filter,
                    with_payload=["chunk_id"],
                    with_vector=False,
                )
            )
            return [(_chunk_id_of(p.payload), float(p.score)) for p in found]

        return top_k_breaking_ties_by_id(fetch, limit, _MAX_FETCH)

    def count(self) -> int:
        return self._live().count(qe.CountRequest(exact=True))

    def ids_for_doc(self, doc_id: str) -> list[str]:
        shard = self._live()
        doc_filter = qe.Filter(must=[qe.FieldCondition(key="doc_id", match=qe.MatchValue(doc_id))])
        chunk_ids: list[str] = []
        offset: qe.PointId | None = None
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(
                    offset=offset,
                    limit=_SCROLL_PAGE,
                    filter=doc_filter,
                    with_payload=["chunk_id"],
                    with_vector=False,
                )
            )
            chunk_ids.extend(_chunk_id_of(r.payload) for r in records)
            if offset is None:
                break
        return sorted(chunk_ids)

    # --- lifecycle ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Flush and release the shard (and its directory lock). Safe to call twice."""
        shard, self._shard = self._shard, None
        if shard is not None:
            shard.flush()
            shard.close()

    # --- helpers -----------------------------------------------------------------------------------

    def _live(self) -> qe.EdgeShard:
        if self._shard is None:
            raise RuntimeError(f"vector index at {self._path} is closed")
        return self._shard

    def _checked_vector(self, vector: Sequence[float]) -> list[float]:
        values = [float(v) for v in vector]
        if len(values) != self._dimension:
            raise ValueError(f"vector has dimension {len(values)}, index expects {self._dimension}")
        if not all(math.isfinite(v) for v in values):
            raise ValueError("vector contains NaN or infinity")
        # Cosine of a zero vector is undefined; the engine would silently score it 0.
        if not any(values):
            raise ValueError("vector is all zeros")
        return values


def payload_time_bounds(filters: SearchFilters | None) -> dict[str, str] | None:
    """The filters' document-date range as RFC 3339 bounds of a datetime payload range (`gte`, `lt`), or
    None when the filters bound no date. A point without `doc_time` never matches a range."""
    if filters is None or not filters.has_dates:
        return None
    lower, upper = filters.time_bounds()
    bounds: dict[str, str] = {}
    if lower is not None:
        bounds["gte"] = lower.isoformat()
    if upper is not None:
        bounds["lt"] = upper.isoformat()
    return bounds


def check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")


def _holds_shard(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def _reject_bare_string(values: Sequence[str], name: str) -> None:
    # A str is a Sequence[str]; iterating it would silently use single characters as IDs.
    if isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of strings, not a string")


def _payload(point: VectorPoint) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "chunk_id": point.chunk_id,
        "doc_id": point.doc_id,
        "acl_class_id": point.acl_class_id,
        "content_hash": point.content_hash,
        "source": point.source,
    }
    if point.doc_time is not None:
        payload["doc_time"] = point.doc_time.isoformat()
    return payload


def _chunk_id_of(payload: Mapping[str, Any] | None) -> str:
    chunk_id = payload.get("chunk_id") if payload is not None else None
    if not isinstance(chunk_id, str):
        raise RuntimeError("vector index point without a chunk_id payload: the shard is corrupt")
    return chunk_id
