"""`QdrantVectorIndex` against the `VectorIndex` contract, plus Qdrant-specific behaviour.

Limitation: no Qdrant server can be installed on the machines these tests run on, so everything here
runs on qdrant-client's LOCAL mode (`QdrantClient(path=...)`): the same client API and request models
the adapter sends to a server, but executed by a brute-force Python engine that ignores HNSW settings
and payload indexes, and that locks its directory — one client per path, in one process. What this
proves is the adapter's logic (IDs, payload, ACL filter in the query, tie-breaks, batching, paging);
it does not prove behaviour against a real server or cluster (approximate HNSW recall, replication,
read consistency). See docs/qdrant.md.

One engine bug is patched for the contract suite (`stable_local_cosine`): local mode re-normalises the
STORED vectors in place on every cosine query (qdrant-client issue #1161), and in float32 that can flip
their last bits back and forth, so two identical queries may return scores 1e-7 apart. A server
normalises once, on upsert. `test_local_mode_cosine_query_rewrites_stored_vectors` pins the bug, so the
patch can go when it is fixed upstream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from qdrant_client import QdrantClient, models
from qdrant_client.local import distances

from kgrag_adapters.qdrant import vector_index as qdrant_module
from kgrag_adapters.qdrant.vector_index import SCHEMA_FILE, QdrantVectorIndex, load_schema
from kgrag_adapters.qdrant_edge import vector_index as edge_module
from kgrag_core.search import VectorPoint
from kgrag_testing.contracts.vector_index import (
    ALLOWED,
    DENIED,
    DIMENSION,
    VectorIndexContract,
    VectorIndexFactory,
    chunk_ids,
    point,
    vec,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
COLLECTION = "contract_chunks"


@pytest.fixture
def stable_local_cosine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Local mode's cosine scoring, on copies: stored vectors stay as upsert left them (see module doc)."""
    original = distances.cosine_similarity

    def on_copies(query: Any, vectors: Any) -> Any:
        return original(query.copy(), vectors.copy())

    monkeypatch.setattr(distances, "cosine_similarity", on_copies)


@pytest.fixture
def index_factory(tmp_path: Path, stable_local_cosine: None) -> Iterator[VectorIndexFactory]:
    # Local mode locks its directory: one open client per path. Reopening a path closes the index the
    # factory opened there before, as a second client on the same path would fail.
    opened: dict[Path, QdrantVectorIndex] = {}
    fresh = 0

    def make(path: Path | None = None) -> QdrantVectorIndex:
        nonlocal fresh
        if path is None:
            path = tmp_path / f"fresh-{fresh}"
            fresh += 1
        previous = opened.pop(path, None)
        if previous is not None:
            previous.close()
        index = QdrantVectorIndex.connect(path=path, collection=COLLECTION, dimension=DIMENSION)
        opened[path] = index
        return index

    yield make
    for index in opened.values():
        index.close()


class TestQdrantVectorIndexContract(VectorIndexContract):
    pass


def _local(tmp_path: Path, name: str = "v", dimension: int = DIMENSION) -> QdrantVectorIndex:
    return QdrantVectorIndex.connect(path=tmp_path / name, collection=COLLECTION, dimension=dimension)


def test_point_ids_are_the_edge_adapters() -> None:
    assert qdrant_module.point_id_for is edge_module.point_id_for
    assert qdrant_module.MAX_LIMIT == edge_module.MAX_LIMIT


def test_payload_is_identical_to_the_edge_adapters(tmp_path: Path) -> None:
    p = VectorPoint(
        chunk_id="ch_1",
        vector=vec(1.0),
        doc_id="doc-1",
        acl_class_id=ALLOWED,
        content_hash="sha256:x",
        source="unit",
        doc_time=datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
    )
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        index = QdrantVectorIndex(client, COLLECTION, DIMENSION)
        index.upsert([p, point("ch_2", vec(0.0, 1.0))])
        records = client.retrieve(COLLECTION, ids=[edge_module.point_id_for("ch_1"), edge_module.point_id_for("ch_2")])
        payloads = {str(r.id): r.payload or {} for r in records}
        assert payloads[edge_module.point_id_for("ch_1")] == edge_module._payload(p)
        assert payloads[edge_module.point_id_for("ch_1")]["doc_time"] == "2024-05-01T12:30:00+00:00"
        assert "doc_time" not in payloads[edge_module.point_id_for("ch_2")]
        # Pinned on both adapters: point IDs are stored, a change orphans every existing point.
        assert edge_module.point_id_for("ch_1") in payloads
        assert edge_module.point_id_for("ch_1") == "714a093a-0ab2-5325-b2d6-015b511c1baa"
    finally:
        client.close()


def test_rejects_non_finite_and_zero_vectors(tmp_path: Path) -> None:
    with _local(tmp_path) as index:
        for bad in (vec(float("nan")), vec(float("inf")), vec()):
            with pytest.raises(ValueError, match="vector"):
                index.upsert([point("c1", bad)])
        assert index.count() == 0


def test_a_bad_point_leaves_nothing_written(tmp_path: Path) -> None:
    with _local(tmp_path) as index:
        good = [point(f"c{i:03d}", vec(1.0, i)) for i in range(300)]
        with pytest.raises(ValueError, match="dimension"):
            index.upsert([*good, point("bad", (1.0,) * (DIMENSION + 1))])
        assert index.count() == 0


def test_rejects_a_bare_string_as_acl_list(tmp_path: Path) -> None:
    with _local(tmp_path) as index, pytest.raises(TypeError):
        index.search(vec(1.0), ALLOWED, 10)


def test_reopening_with_another_dimension_fails(tmp_path: Path) -> None:
    _local(tmp_path).close()
    with pytest.raises(ValueError, match=f"dimension {DIMENSION}, index expects {DIMENSION * 2}"):
        _local(tmp_path, dimension=DIMENSION * 2)
    # The failed open released the directory lock.
    with _local(tmp_path) as index:
        assert index.count() == 0


def test_connect_needs_exactly_one_target(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        QdrantVectorIndex.connect()
    with pytest.raises(ValueError, match="exactly one"):
        QdrantVectorIndex.connect("http://localhost:6333", path=tmp_path / "v")
    with pytest.raises(ValueError, match="api_key"):
        QdrantVectorIndex.connect(path=tmp_path / "v", api_key="secret")


def test_local_mode_allows_one_client_per_path(tmp_path: Path) -> None:
    with _local(tmp_path), pytest.raises(RuntimeError, match="already open"):
        _local(tmp_path)


def test_closed_index_refuses_work(tmp_path: Path) -> None:
    index = _local(tmp_path)
    index.close()
    index.close()
    with pytest.raises(RuntimeError, match="closed"):
        index.count()


def test_a_client_passed_in_stays_open(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        QdrantVectorIndex(client, COLLECTION, DIMENSION).close()
        assert client.collection_exists(COLLECTION)
        # Two indexes (collections) can share one client.
        with QdrantVectorIndex(client, "other", DIMENSION) as other:
            other.upsert([point("c1", vec(1.0))])
            assert other.count() == 1
        assert QdrantVectorIndex(client, COLLECTION, DIMENSION).count() == 0
    finally:
        client.close()


def test_collection_is_created_from_the_schema_file(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        with (
            mock.patch.object(client, "create_collection", wraps=client.create_collection) as create,
            mock.patch.object(client, "create_payload_index", wraps=client.create_payload_index) as index,
        ):
            QdrantVectorIndex(client, COLLECTION, DIMENSION)
        create.assert_called_once_with(
            COLLECTION,
            vectors_config=models.VectorParams(size=DIMENSION, distance=models.Distance.COSINE, on_disk=True),
            shard_number=2,
            replication_factor=1,
            hnsw_config=models.HnswConfigDiff(m=16, ef_construct=100, full_scan_threshold=10000),
            optimizers_config=models.OptimizersConfigDiff(indexing_threshold=20000, max_segment_size=2000000),
            quantization_config=models.ScalarQuantization(
                scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8, quantile=0.99, always_ram=True)
            ),
            on_disk_payload=True,
        )
        requested = {c.args[1]: c.kwargs["field_schema"] for c in index.call_args_list}
        assert requested == {
            "acl_class_id": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=False),
            "doc_id": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD),
            "source": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD),
            "doc_time": models.DatetimeIndexParams(type=models.DatetimeIndexType.DATETIME),
        }
        assert all(c.kwargs["wait"] is True for c in index.call_args_list)
    finally:
        client.close()


def test_schema_file_has_one_home() -> None:
    link = Path(qdrant_module.__file__).parent / "schemas"
    assert link.is_symlink()
    assert not Path(str(link.readlink())).is_absolute()  # relative, so it works in any checkout
    assert SCHEMA_FILE.resolve() == (REPO_ROOT / "schemas" / "qdrant" / "chunks.json").resolve()
    schema = load_schema()
    raw = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema.collection == raw["collection"] == "kgrag_chunks"
    assert schema.size == 384  # the default dimension of connect()


def test_searches_send_the_schema_search_params(tmp_path: Path) -> None:
    # HNSW breadth and rescoring on the float32 originals (scores stay exact cosines under int8 quantisation).
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        index = QdrantVectorIndex(client, COLLECTION, DIMENSION)
        index.upsert([point("c1", vec(1.0))])
        with mock.patch.object(client, "query_points", wraps=client.query_points) as query:
            assert [h.chunk_id for h in index.search(vec(1.0), [ALLOWED], 5)] == ["c1"]
        sent = query.call_args.kwargs["search_params"]
        assert sent == models.SearchParams(
            hnsw_ef=128, quantization=models.QuantizationSearchParams(rescore=True, oversampling=1.5)
        )
    finally:
        client.close()


def test_only_scalar_quantisation_is_accepted_in_schema(tmp_path: Path) -> None:
    raw = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    raw["quantization_config"] = {"product": {"compression": "x16"}}
    bad = tmp_path / "chunks.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="scalar"):
        load_schema(bad)


def test_unknown_index_type_in_schema_is_rejected(tmp_path: Path) -> None:
    raw = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    raw["payload_indexes"]["title"] = {"type": "geo"}
    bad = tmp_path / "chunks.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="geo"):
        load_schema(bad)


def test_writes_are_batched_and_waited_for(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        index = QdrantVectorIndex(client, COLLECTION, DIMENSION)
        points = [point(f"c{i:04d}", vec(1.0, i)) for i in range(600)]
        with mock.patch.object(client, "upsert", wraps=client.upsert) as upsert:
            index.upsert(points)
        assert [len(c.kwargs["points"]) for c in upsert.call_args_list] == [256, 256, 88]
        assert all(c.kwargs["wait"] is True for c in upsert.call_args_list)
        with mock.patch.object(client, "delete", wraps=client.delete) as delete:
            index.delete([p.chunk_id for p in points[:300]])
        assert [len(c.kwargs["points_selector"].points) for c in delete.call_args_list] == [256, 44]
        assert all(c.kwargs["wait"] is True for c in delete.call_args_list)
        assert index.count() == 300
    finally:
        client.close()


def test_acl_filter_is_sent_inside_the_query(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        index = QdrantVectorIndex(client, COLLECTION, DIMENSION)
        index.upsert([point("a", vec(1.0, 0.5)), point("d", vec(1.0), acl=DENIED)])
        with mock.patch.object(client, "query_points", wraps=client.query_points) as query:
            assert chunk_ids(index.search(vec(1.0), [ALLOWED, ALLOWED, "acl_other"], 1)) == ["a"]
        (only,) = query.call_args_list
        assert only.kwargs["query_filter"] == models.Filter(
            must=[models.FieldCondition(key="acl_class_id", match=models.MatchAny(any=[ALLOWED, "acl_other"]))]
        )
    finally:
        client.close()


def test_ties_past_one_fetch_round_are_resolved(tmp_path: Path) -> None:
    with _local(tmp_path) as index:
        # 40 equal scores straddle the cut-off at 5: the index must fetch past the first round (limit+1).
        index.upsert([point(f"tie-{i:02d}", vec(1.0, 1.0)) for i in reversed(range(40))])
        hits = index.search(vec(1.0, 1.0), [ALLOWED], 5)
        assert chunk_ids(hits) == [f"tie-{i:02d}" for i in range(5)]
        assert [h.rank for h in hits] == [1, 2, 3, 4, 5]


def test_ids_for_doc_pages_through_scroll(tmp_path: Path) -> None:
    with _local(tmp_path) as index:
        index.upsert(
            [point(f"a{i:04d}", vec(1.0, i), doc_id="doc-a") for i in range(600)]
            + [point("b1", vec(0.0, 1.0), doc_id="doc-b")]
        )
        assert index.ids_for_doc("doc-a") == [f"a{i:04d}" for i in range(600)]
        assert index.ids_for_doc("doc-b") == ["b1"]


def test_local_mode_cosine_query_rewrites_stored_vectors(tmp_path: Path) -> None:
    """The engine bug `stable_local_cosine` patches. If this fails, upstream fixed it: drop the patch."""
    client = QdrantClient(path=str(tmp_path / "q"))
    try:
        index = QdrantVectorIndex(client, COLLECTION, DIMENSION)
        index.upsert([point("c1", vec(1.0, 1.0, 1.0))])
        # Each query divides the stored float32 vector by its norm again; for this one that alternates
        # between two bit patterns, so identical queries alternate between two scores.
        scores = [index.search(vec(1.0, 1.0, 1.1), [ALLOWED], 1)[0].score for _ in range(4)]
        assert scores[0] != scores[1]
        assert scores[0] == pytest.approx(scores[1], abs=1e-6)
    finally:
        client.close()
