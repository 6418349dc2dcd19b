"""Contract suite for `VectorIndex` adapters.

Subclass `VectorIndexContract` in a `Test*` class and provide an `index_factory` fixture: calling it
with no argument returns a fresh, empty index of dimension `DIMENSION`; calling it with a path opens
the index stored there (creating it if needed), so a test can close an index and open it again. Adapters
without a local directory may treat the path as a name for their storage (e.g. a collection).
Opened indexes are the fixture's to close at teardown.
"""

from __future__ import annotations

import itertools
import math
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

import pytest

from kgrag_core.filters import SearchFilters
from kgrag_core.ports import VectorIndex
from kgrag_core.search import RouteHit, VectorPoint

DIMENSION = 8
ALLOWED = "acl_allowed"
ALLOWED_TOO = "acl_allowed_too"
DENIED = "acl_denied"


class VectorIndexFactory(Protocol):
    def __call__(self, path: Path | None = None) -> VectorIndex: ...


@runtime_checkable
class _Closeable(Protocol):
    def close(self) -> None: ...


def vec(*values: float) -> tuple[float, ...]:
    """A DIMENSION-long vector: the given leading values, then zeros."""
    return tuple(values) + (0.0,) * (DIMENSION - len(values))


def point(
    chunk_id: str,
    vector: tuple[float, ...],
    *,
    acl: str = ALLOWED,
    doc_id: str = "doc-1",
    source: str = "contract",
    doc_time: datetime | None = None,
) -> VectorPoint:
    return VectorPoint(
        chunk_id=chunk_id,
        vector=vector,
        doc_id=doc_id,
        acl_class_id=acl,
        content_hash=f"sha256:{chunk_id}",
        source=source,
        doc_time=doc_time,
    )


def chunk_ids(hits: list[RouteHit]) -> list[str]:
    return [h.chunk_id for h in hits]


def close(index: VectorIndex) -> None:
    if isinstance(index, _Closeable):
        index.close()


# A fixed permutation, so insertion order differs from chunk_id order on every engine.
_SHUFFLED = (7, 2, 11, 0, 9, 4, 1, 10, 5, 3, 8, 6)


class VectorIndexContract:
    max_limit = 1000

    def test_is_a_vector_index(self, index_factory: VectorIndexFactory) -> None:
        assert isinstance(index_factory(), VectorIndex)

    def test_new_index_is_empty(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        assert index.count() == 0
        assert index.search(vec(1.0), [ALLOWED], 10) == []

    def test_upsert_then_search_finds_it(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert([point("c1", vec(1.0, 0.5)), point("c2", vec(0.0, 1.0))])
        hits = index.search(vec(1.0, 0.5), [ALLOWED], 10)
        assert chunk_ids(hits) == ["c1", "c2"]
        assert hits[0].rank == 1
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)

    def test_hits_are_ranked_by_descending_score(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert([point(f"c{i}", vec(1.0, i / 4)) for i in range(8)])
        hits = index.search(vec(1.0), [ALLOWED], 8)
        assert chunk_ids(hits) == [f"c{i}" for i in range(8)]
        assert [h.rank for h in hits] == list(range(1, 9))
        assert all(a.score > b.score for a, b in itertools.pairwise(hits))

    def test_upsert_is_idempotent_and_replaces(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert([point("c1", vec(1.0), acl=DENIED)])
        index.upsert([point("c1", vec(1.0), acl=DENIED)])
        assert index.count() == 1
        index.upsert([point("c1", vec(0.0, 1.0), acl=ALLOWED)])
        assert index.count() == 1
        assert index.search(vec(0.0, 1.0), [DENIED], 10) == []
        hits = index.search(vec(0.0, 1.0), [ALLOWED], 10)
        assert chunk_ids(hits) == ["c1"]
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)

    def test_same_chunk_twice_in_one_batch_keeps_one_point(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert([point("c1", vec(1.0)), point("c1", vec(0.0, 1.0))])
        assert index.count() == 1

    def test_large_batch(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        points = [point(f"c{i:04d}", vec(1.0, math.sin(i), math.cos(i))) for i in range(600)]
        index.upsert(points)
        assert index.count() == 600
        assert chunk_ids(index.search(points[123].vector, [ALLOWED], 1)) == ["c0123"]

    def test_delete_removes_from_search_and_count(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert([point("c1", vec(1.0)), point("c2", vec(1.0, 1.0))])
        index.delete(["c1", "never-existed"])
        assert index.count() == 1
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 10)) == ["c2"]
        index.delete([])
        assert index.count() == 1

    def test_ids_for_doc(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert(
            [point(f"a{i}", vec(1.0, i), doc_id="doc-a") for i in (3, 1, 2)]
            + [point("b1", vec(0.0, 1.0), doc_id="doc-b")]
        )
        assert index.ids_for_doc("doc-a") == ["a1", "a2", "a3"]
        assert index.ids_for_doc("doc-b") == ["b1"]
        assert index.ids_for_doc("doc-missing") == []
        index.delete(["a2"])
        assert index.ids_for_doc("doc-a") == ["a1", "a3"]

    def test_acl_filter_is_inside_the_search(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        # Denied points are all closer to the query than any allowed one: a post-filter over the
        # top 5 would return nothing.
        denied = [point(f"d{i:02d}", vec(1.0, 0.001 * i), acl=DENIED) for i in range(30)]
        allowed = [point(f"a{i}", vec(1.0, 1.0 + 0.2 * i), acl=ALLOWED) for i in range(5)]
        index.upsert(denied + allowed)
        hits = index.search(vec(1.0), [ALLOWED], 5)
        assert chunk_ids(hits) == ["a0", "a1", "a2", "a3", "a4"]
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 50)) == ["a0", "a1", "a2", "a3", "a4"]

    def test_acl_filter_accepts_several_classes(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert(
            [
                point("a", vec(1.0, 0.1), acl=ALLOWED),
                point("b", vec(1.0, 0.2), acl=ALLOWED_TOO),
                point("d", vec(1.0), acl=DENIED),
            ]
        )
        assert chunk_ids(index.search(vec(1.0), [ALLOWED_TOO, ALLOWED], 10)) == ["a", "b"]

    def test_source_filter_is_inside_the_search(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        # Every "tickets" point is closer to the query than any "wiki" one: a post-filter over the top 3
        # would return nothing.
        tickets = [point(f"t{i:02d}", vec(1.0, 0.001 * i), source="tickets") for i in range(20)]
        wiki = [point(f"w{i}", vec(1.0, 1.0 + 0.2 * i), source="wiki") for i in range(4)]
        index.upsert(tickets + wiki)
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 3)) == ["t00", "t01", "t02"]  # the positive control
        only_wiki = SearchFilters.build(sources=["wiki"])
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 3, filters=only_wiki)) == ["w0", "w1", "w2"]
        both = SearchFilters.build(sources=["wiki", "tickets"])
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 3, filters=both)) == ["t00", "t01", "t02"]
        assert index.search(vec(1.0), [ALLOWED], 3, filters=SearchFilters.build(sources=["email"])) == []

    def test_date_filter_is_inside_the_search(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert(
            [point(f"old{i}", vec(1.0, 0.001 * i), doc_time=datetime(2023, 5, 1, tzinfo=UTC)) for i in range(10)]
            + [
                point("jan", vec(1.0, 1.0), doc_time=datetime(2024, 1, 1, 0, 0, tzinfo=UTC)),
                point("jun-end", vec(1.0, 1.1), doc_time=datetime(2024, 6, 30, 23, 59, tzinfo=UTC)),
                point("jul", vec(1.0, 1.2), doc_time=datetime(2024, 7, 1, tzinfo=UTC)),
                point("undated", vec(1.0, 0.5)),
            ]
        )
        in_2024_h1 = SearchFilters.build(date_from=date(2024, 1, 1), date_to=date(2024, 6, 30))
        # Both days of the range are included; the older, closer points never take a place in the top 2.
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 2, filters=in_2024_h1)) == ["jan", "jun-end"]
        since = SearchFilters.build(date_from=date(2024, 6, 1))
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 5, filters=since)) == ["jun-end", "jul"]
        as_of = SearchFilters.build(as_of=date(2024, 1, 1))
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 3, filters=as_of)) == ["old0", "old1", "old2"]
        found = chunk_ids(index.search(vec(1.0), [ALLOWED], 20, filters=as_of))
        assert "jan" in found and "jun-end" not in found and "undated" not in found
        # Without a filter the undated point is a candidate like any other (the positive control).
        assert "undated" in chunk_ids(index.search(vec(1.0), [ALLOWED], 20))

    def test_filters_never_widen_the_acl(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        when = datetime(2024, 3, 1, tzinfo=UTC)
        index.upsert(
            [
                point("denied", vec(1.0), acl=DENIED, source="wiki", doc_time=when),
                point("allowed", vec(1.0, 1.0), source="wiki", doc_time=when),
            ]
        )
        wiki_2024 = SearchFilters.build(sources=["wiki"], date_from=date(2024, 1, 1), date_to=date(2024, 12, 31))
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 10, filters=wiki_2024)) == ["allowed"]
        assert chunk_ids(index.search(vec(1.0), [DENIED], 10, filters=wiki_2024)) == ["denied"]

    def test_empty_acl_list_returns_nothing(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert([point("c1", vec(1.0))])
        assert index.search(vec(1.0), [], 10) == []

    def test_ties_are_broken_by_chunk_id(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        for i in _SHUFFLED:
            index.upsert([point(f"tie-{i:02d}", vec(1.0, 1.0, 1.0))])
        index.upsert([point("best", vec(1.0, 1.0, 1.1))])
        first = index.search(vec(1.0, 1.0, 1.1), [ALLOWED], 5)
        assert chunk_ids(first) == ["best", "tie-00", "tie-01", "tie-02", "tie-03"]
        assert index.search(vec(1.0, 1.0, 1.1), [ALLOWED], 5) == first

    def test_tie_order_does_not_depend_on_insertion_order(self, index_factory: VectorIndexFactory) -> None:
        in_order, reversed_order = index_factory(), index_factory()
        points = [point(f"tie-{i:02d}", vec(0.0, 2.0)) for i in range(12)]
        in_order.upsert(points)
        reversed_order.upsert(points[::-1])
        assert in_order.search(vec(0.0, 1.0), [ALLOWED], 4) == reversed_order.search(vec(0.0, 1.0), [ALLOWED], 4)

    def test_limit_is_bounded(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        index.upsert([point("c1", vec(1.0))])
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], self.max_limit)) == ["c1"]
        for bad in (self.max_limit + 1, 0, -1):
            with pytest.raises(ValueError, match="limit"):
                index.search(vec(1.0), [ALLOWED], bad)

    def test_wrong_dimension_is_rejected(self, index_factory: VectorIndexFactory) -> None:
        index = index_factory()
        with pytest.raises(ValueError, match="dimension"):
            index.upsert([point("c1", (1.0,) * (DIMENSION + 1))])
        with pytest.raises(ValueError, match="dimension"):
            index.search((1.0,) * (DIMENSION - 1), [ALLOWED], 10)
        assert index.count() == 0

    def test_persists_across_close_and_reopen(self, index_factory: VectorIndexFactory, tmp_path: Path) -> None:
        where = tmp_path / "persisted-vectors"
        index = index_factory(where)
        index.upsert([point("c1", vec(1.0), doc_id="doc-p"), point("c2", vec(1.0, 1.0), doc_id="doc-p")])
        index.delete(["c2"])
        close(index)
        reopened = index_factory(where)
        assert reopened.count() == 1
        assert reopened.ids_for_doc("doc-p") == ["c1"]
        assert chunk_ids(reopened.search(vec(1.0), [ALLOWED], 10)) == ["c1"]
        reopened.upsert([point("c3", vec(0.0, 1.0))])
        close(reopened)
        assert index_factory(where).count() == 2
