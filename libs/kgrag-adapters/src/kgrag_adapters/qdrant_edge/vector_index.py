"""`VectorIndex` on Qdrant Edge: an in-process shard in a local directory, one point per chunk.

The caller's readable ACL classes are a payload filter inside the engine's search (backed by a keyword
payload index), so denied chunks never take a place in the top-k.

The shard keeps its write-ahead log enabled: the engine then holds an exclusive lock on the directory,
so one process (and one instance) owns a path at a time; another process loads it once this one has
closed it. Every upsert/delete is flushed before it returns, so nothing acknowledged is lost on a crash.

Scale (docs/benchmarks.md, "Search at 1M chunks"): the engine builds an HNSW graph and int8 quantised
vectors only when its optimizer runs, which on Qdrant Edge happens only on `optimize()`; until then every
search scans every vector. So `upsert` runs the optimizer once `EdgeTuning.optimize_after_points` points
were written since the last run. The engine holds the GIL while it optimizes (measured: a thread of the
same process did not run for the whole call), so a search of the same process waits for it; a bulk load
pays it in the loading thread, every `optimize_after_points` points, in pieces no larger than a segment
(`max_segment_kb`), so no single run rebuilds the whole index.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class EdgeTuning:
    """How the shard indexes vectors; the defaults were measured at 100k and 1M chunks (docs/benchmarks.md).

    Changing them on an existing shard is allowed: the engine stores the new config and the next optimizer
    run builds the index with it."""

    hnsw_m: int = 16
    hnsw_ef_construct: int = 64
    # Candidates explored per search; the result's top-k comes from these, rescored on the original vectors.
    hnsw_ef: int = 128
    # Below this many KB of matching vectors a filtered search scans them instead of walking the graph.
    full_scan_threshold_kb: int = 10_000
    # int8 copies (a quarter of the memory of the float32 originals) for the graph walk, kept in RAM.
    int8_quantisation: bool = True
    # Bounds what one optimizer run rebuilds (about 200k vectors of 384 dimensions).
    max_segment_kb: int = 300_000
    optimize_after_points: int = 50_000

    def config(self, dimension: int) -> qe.EdgeConfig:
        quantisation = (
            qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, quantile=0.99, always_ram=True)
            if self.int8_quantisation
            else None
        )
        return qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine),
            hnsw_config=qe.HnswIndexConfig(
                m=self.hnsw_m, ef_construct=self.hnsw_ef_construct, full_scan_threshold=self.full_scan_threshold_kb
            ),
            quantization_config=quantisation,
            optimizers=qe.EdgeOptimizersConfig(max_segment_size=self.max_segment_kb),
        )

    def search_params(self) -> qe.SearchParams:
        # Rescoring makes every returned score the exact cosine, as without quantisation (ties, fusion).
        return qe.SearchParams(hnsw_ef=self.hnsw_ef, quantization=qe.QuantizationSearchParams(rescore=True))


def point_id_for(chunk_id: str) -> str:
    """The engine's point ID for a chunk (the engine accepts only integers and UUIDs)."""
    return str(uuid.uuid5(_POINT_NAMESPACE, chunk_id))


class EdgeVectorIndex(Closeable):
    """Cosine-similarity index of chunk vectors in a Qdrant Edge shard at `path`."""

    def __init__(self, path: Path, dimension: int, *, tuning: EdgeTuning | None = None) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self._path = Path(path)
        self._dimension = dimension
        self._tuning = tuning or EdgeTuning()
        self._search_params = self._tuning.search_params()
        self._written_since_optimize = 0
        config = self._tuning.config(dimension)
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
        self._written_since_optimize += len(prepared)
        if self._written_since_optimize >= self._tuning.optimize_after_points:
            self.optimize()

    def optimize(self) -> bool:
        """Build the HNSW graph and quantised vectors of what was written since the last run (blocking).

        True when the engine changed segments. A bulk load calls it once at the end, so that the points
        written after the last automatic run are indexed too."""
        shard = self._live()
        changed = shard.optimize()
        shard.flush()
        self._written_since_optimize = 0
        return changed

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
        exact: bool = False,
    ) -> list[RouteHit]:
        """The `limit` nearest readable chunks the filters admit; `exact` scans every vector instead (to
        measure recall)."""
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
        params = qe.SearchParams(exact=True) if exact else self._search_params

        def fetch(size: int) -> list[tuple[str, float]]:
            found = shard.query(
                qe.QueryRequest(
                    limit=size,
                    query=qe.Query.Nearest(query_vector),
                    filter=acl_filter,
                    params=params,
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
