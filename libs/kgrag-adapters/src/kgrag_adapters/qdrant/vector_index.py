"""`VectorIndex` on a Qdrant server through `qdrant-client`: one point per chunk in one collection.

The distributed twin of `kgrag_adapters.qdrant_edge.vector_index.EdgeVectorIndex`, with the same
semantics: the same point IDs (`point_id_for`) and payload, so a collection and an edge shard hold the
same points; the caller's readable ACL classes are a payload filter inside the query, so denied chunks
never take a place in the top-k; ties are broken by chunk_id; writes are acknowledged only once applied
(`wait=True`), so a search right after `upsert`/`delete` sees them.

The collection is created, when missing, from `schemas/qdrant/chunks.json` (reached through the
`schemas` symlink next to this module, like the PostgreSQL migrations); an existing collection must
hold one unnamed Cosine vector of the index's dimension.

`connect(path=...)` opens qdrant-client's local mode instead of a server: same client API, but brute
force in Python, with an exclusive lock on the directory (one client per path) — for tests and demos,
not a production backend.
"""

from __future__ import annotations

import fcntl
import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from kgrag_adapters.lifecycle import Closeable
from kgrag_adapters.qdrant_edge.vector_index import (
    MAX_LIMIT,
    _payload,  # the edge adapter's payload, so both engines store identical points
    check_limit,
    payload_time_bounds,
    point_id_for,
)
from kgrag_core.filters import SearchFilters
from kgrag_core.retrieval.ties import top_k_breaking_ties_by_id
from kgrag_core.search import RouteHit, VectorPoint

__all__ = ["MAX_LIMIT", "SCHEMA_FILE", "CollectionSchema", "QdrantVectorIndex", "load_schema", "point_id_for"]

SCHEMA_FILE = Path(__file__).resolve().parent / "schemas" / "chunks.json"
# Ties at the cut-off are resolved by fetching further; this bounds that extra work (as on the edge).
_MAX_FETCH = 4 * MAX_LIMIT
_WRITE_BATCH = 256
_SCROLL_PAGE = 512
_INDEX_PARAMS: dict[str, type[models.KeywordIndexParams] | type[models.DatetimeIndexParams]] = {
    "keyword": models.KeywordIndexParams,
    "datetime": models.DatetimeIndexParams,
}


@dataclass(frozen=True, slots=True)
class CollectionSchema:
    """`schemas/qdrant/chunks.json`, parsed into the client's models."""

    collection: str
    size: int
    distance: models.Distance
    hnsw_config: models.HnswConfigDiff
    on_disk_payload: bool
    payload_indexes: Mapping[str, models.KeywordIndexParams | models.DatetimeIndexParams]
    vectors_on_disk: bool | None = None
    shard_number: int | None = None
    replication_factor: int | None = None
    quantization_config: models.ScalarQuantization | None = None
    optimizers_config: models.OptimizersConfigDiff | None = None
    search_params: models.SearchParams | None = None


def load_schema(path: Path = SCHEMA_FILE) -> CollectionSchema:
    raw = json.loads(path.read_text(encoding="utf-8"))
    indexes: dict[str, models.KeywordIndexParams | models.DatetimeIndexParams] = {}
    for field, spec in raw["payload_indexes"].items():
        params = _INDEX_PARAMS.get(spec["type"])
        if params is None:
            raise ValueError(f"{path}: unsupported payload index type {spec['type']!r} for {field!r}")
        indexes[field] = params(**spec)
    quantization = raw.get("quantization_config")
    if quantization is not None and set(quantization) != {"scalar"}:
        raise ValueError(f"{path}: quantization_config supports only 'scalar', got {sorted(quantization)}")
    optimizers = raw.get("optimizers_config")
    search = raw.get("search_params")
    return CollectionSchema(
        collection=str(raw["collection"]),
        size=int(raw["vectors"]["size"]),
        distance=models.Distance(raw["vectors"]["distance"]),
        hnsw_config=models.HnswConfigDiff(**raw["hnsw_config"]),
        on_disk_payload=bool(raw["on_disk_payload"]),
        payload_indexes=indexes,
        vectors_on_disk=raw["vectors"].get("on_disk"),
        shard_number=raw.get("shard_number"),
        replication_factor=raw.get("replication_factor"),
        quantization_config=(
            models.ScalarQuantization(scalar=models.ScalarQuantizationConfig(**quantization["scalar"]))
            if quantization is not None
            else None
        ),
        optimizers_config=models.OptimizersConfigDiff(**optimizers) if optimizers is not None else None,
        search_params=models.SearchParams(**search) if search is not None else None,
    )


class QdrantVectorIndex(Closeable):
    """Cosine-similarity index of chunk vectors in the Qdrant collection `collection`.

    The client passed in stays the caller's: `close()` closes only a client that `connect()` opened.
    """

    def __init__(self, client: QdrantClient, collection: str, dimension: int) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self._client: QdrantClient | None = client
        self._collection = collection
        self._dimension = dimension
        self._owns_client = False
        schema = load_schema()
        self._search_params = schema.search_params
        _ensure_collection(client, collection, dimension, schema)

    @classmethod
    def connect(
        cls,
        url: str | None = None,
        *,
        path: Path | None = None,
        api_key: str | None = None,
        collection: str = "kgrag_chunks",
        dimension: int = 384,
    ) -> QdrantVectorIndex:
        """An index on the Qdrant server at `url`, or on qdrant-client's local mode in directory `path`."""
        if (url is None) == (path is None):
            raise ValueError("pass exactly one of url (a Qdrant server) or path (qdrant-client local mode)")
        if path is not None:
            if api_key is not None:
                raise ValueError("api_key applies to a Qdrant server, not to local mode")
            _refuse_if_locked(path)
            client = QdrantClient(path=str(path))
        else:
            client = QdrantClient(url=url, api_key=api_key)
        try:
            index = cls(client, collection, dimension)
        except BaseException:
            client.close()  # local mode would otherwise keep the directory locked until garbage collection
            raise
        index._owns_client = True
        return index

    @property
    def collection(self) -> str:
        return self._collection

    @property
    def dimension(self) -> int:
        return self._dimension

    # --- VectorIndex -------------------------------------------------------------------------------

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        # Validate everything first so a bad point cannot leave a half-applied call behind. Keyed by
        # point ID, so a chunk given twice is written once, with its last version (as on the edge).
        prepared = {
            point_id_for(p.chunk_id): models.PointStruct(
                id=point_id_for(p.chunk_id), vector=self._checked_vector(p.vector), payload=_payload(p)
            )
            for p in points
        }
        if not prepared:
            return
        client = self._live()
        batch = list(prepared.values())
        for start in range(0, len(batch), _WRITE_BATCH):
            client.upsert(self._collection, points=batch[start : start + _WRITE_BATCH], wait=True)

    def delete(self, chunk_ids: Sequence[str]) -> None:
        _reject_bare_string(chunk_ids, "chunk_ids")
        ids: list[models.ExtendedPointId] = [point_id_for(c) for c in sorted(set(chunk_ids))]
        if not ids:
            return
        client = self._live()
        for start in range(0, len(ids), _WRITE_BATCH):
            client.delete(
                self._collection,
                points_selector=models.PointIdsList(points=ids[start : start + _WRITE_BATCH]),
                wait=True,
            )

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
        client = self._live()
        conditions: list[models.Condition] = [
            models.FieldCondition(key="acl_class_id", match=models.MatchAny(any=sorted(set(acl_class_ids))))
        ]
        if filters is not None and filters.sources:
            conditions.append(models.FieldCondition(key="source", match=models.MatchAny(any=list(filters.sources))))
        bounds = payload_time_bounds(filters)
        if bounds is not None:
            # The collection indexes doc_time as a datetime payload (schemas/qdrant/chunks.json).
            conditions.append(models.FieldCondition(key="doc_time", range=models.DatetimeRange(**bounds)))
        acl_filter = models.Filter(must=conditions)

        def fetch(size: int) -> list[tuple[str, float]]:
            found = client.query_points(
                self._collection,
                query=query_vector,
                query_filter=acl_filter,
                search_params=self._search_params,
                limit=size,
                with_payload=["chunk_id"],
                with_vectors=False,
            ).points
            return [(_chunk_id_of(p.payload), float(p.score)) for p in found]

        return top_k_breaking_ties_by_id(fetch, limit, _MAX_FETCH)

    def count(self) -> int:
        return self._live().count(self._collection, exact=True).count

    def ids_for_doc(self, doc_id: str) -> list[str]:
        client = self._live()
        doc_filter = models.Filter(must=[models.FieldCondition(key="doc_id", match=models.MatchValue(value=doc_id))])
        chunk_ids: list[str] = []
        offset: models.ExtendedPointId | None = None
        while True:
            records, offset = client.scroll(
                self._collection,
                scroll_filter=doc_filter,
                limit=_SCROLL_PAGE,
                offset=offset,
                with_payload=["chunk_id"],
                with_vectors=False,
            )
            chunk_ids.extend(_chunk_id_of(r.payload) for r in records)
            if offset is None:
                break
        return sorted(chunk_ids)

    # --- lifecycle ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop using the client; close it if `connect()` opened it (releasing a local-mode lock). Safe twice."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            client.close()

    # --- helpers -----------------------------------------------------------------------------------

    def _live(self) -> QdrantClient:
        if self._client is None:
            raise RuntimeError(f"vector index on collection {self._collection!r} is closed")
        return self._client

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


def _ensure_collection(client: QdrantClient, collection: str, dimension: int, schema: CollectionSchema) -> None:
    if not client.collection_exists(collection):
        try:
            client.create_collection(
                collection,
                vectors_config=models.VectorParams(
                    size=dimension, distance=schema.distance, on_disk=schema.vectors_on_disk
                ),
                shard_number=schema.shard_number,
                replication_factor=schema.replication_factor,
                hnsw_config=schema.hnsw_config,
                optimizers_config=schema.optimizers_config,
                quantization_config=schema.quantization_config,
                on_disk_payload=schema.on_disk_payload,
            )
        except (UnexpectedResponse, ValueError):
            # Another process may have created it since the check (a server answers 409, local mode raises
            # ValueError): then validate theirs below; anything else, or no collection, is re-raised.
            if not client.collection_exists(collection):
                raise
    info = client.get_collection(collection)
    vectors = info.config.params.vectors
    if not isinstance(vectors, models.VectorParams):
        raise ValueError(f"collection {collection!r} has named vectors; the index expects one unnamed vector")
    if vectors.size != dimension:
        raise ValueError(
            f"collection {collection!r} holds vectors of dimension {vectors.size}, index expects {dimension}"
        )
    if vectors.distance != schema.distance:
        raise ValueError(
            f"collection {collection!r} uses {vectors.distance.value} distance, index expects {schema.distance.value}"
        )
    for field, params in schema.payload_indexes.items():
        existing = info.payload_schema.get(field)
        if existing is not None and existing.data_type.value == params.type.value:
            continue  # idempotent on a server; also repairs a collection created before an index existed
        with warnings.catch_warnings():
            # Local mode (tests, demos) keeps no payload indexes and warns once per process that they
            # have no effect there; the call is for a server, so silence exactly that warning.
            warnings.filterwarnings("ignore", message="Payload indexes have no effect", category=UserWarning)
            client.create_payload_index(collection, field, field_schema=params, wait=True)


def _refuse_if_locked(path: Path) -> None:
    """Fail cleanly when another local-mode client holds `path`.

    qdrant-client raises too, but leaves its lock file open (a ResourceWarning at garbage collection);
    asking first avoids that. A client that takes the lock between this check and ours still gets
    qdrant-client's own error.
    """
    try:
        lock_file = (path / ".lock").open("r+")  # the lock file qdrant-client's local mode flocks
    except FileNotFoundError:
        return
    with lock_file:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(
                f"{path} is already open in another qdrant-client: local mode allows one client per "
                "directory (use a Qdrant server for concurrent access)"
            ) from None
        fcntl.flock(lock_file, fcntl.LOCK_UN)


def _reject_bare_string(values: Sequence[str], name: str) -> None:
    # A str is a Sequence[str]; iterating it would silently use single characters as IDs.
    if isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of strings, not a string")


def _chunk_id_of(payload: Mapping[str, Any] | None) -> str:
    chunk_id = payload.get("chunk_id") if payload is not None else None
    if not isinstance(chunk_id, str):
        raise RuntimeError("vector index point without a chunk_id payload: the collection is corrupt")
    return chunk_id
