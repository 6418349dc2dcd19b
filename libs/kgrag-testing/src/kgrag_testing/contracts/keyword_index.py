"""Contract suite for `KeywordIndex` adapters.

Subclass `KeywordIndexContract` in a `Test*` class and provide an `index_factory` fixture: calling it
with no argument returns a fresh, empty index; calling it with a path opens the index stored there
(creating it if needed), so a test can close an index and open it again. Adapters without a local
directory may treat the path as a name for their storage. Opened indexes are the fixture's to close.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

import pytest

from kgrag_core.filters import SearchFilters
from kgrag_core.ports import KeywordIndex
from kgrag_core.search import KeywordDoc, RouteHit

ALLOWED = "acl_allowed"
ALLOWED_TOO = "acl_allowed_too"
DENIED = "acl_denied"

# Query-syntax characters and operators of the common engines (tantivy, Lucene, OpenSearch).
HOSTILE_QUERIES = (
    'AND ( "unbalanced',
    "C++ -foo:bar",
    "title:secret OR *",
    "acl_class_id:acl_denied",
    "a~2 b^10 [x TO y] {z} /re.*ex/",
    "\\ \" ' ` ; -- /* */ && || ! ?",
    "NOT",
    ")(",
    "\x00\x01\u200b",
    "ünïcödé ßtraße 東京 🙂",
    "word " * 5000,
)


class KeywordIndexFactory(Protocol):
    def __call__(self, path: Path | None = None) -> KeywordIndex: ...


@runtime_checkable
class _Closeable(Protocol):
    def close(self) -> None: ...


def kdoc(
    chunk_id: str,
    text: str,
    *,
    title: str = "",
    breadcrumb: str = "",
    acl: str = ALLOWED,
    doc_id: str = "doc-1",
    source: str = "contract",
    doc_time: datetime | None = None,
) -> KeywordDoc:
    return KeywordDoc(
        chunk_id=chunk_id,
        doc_id=doc_id,
        acl_class_id=acl,
        title=title,
        breadcrumb=breadcrumb,
        text=text,
        source=source,
        doc_time=doc_time,
    )


def chunk_ids(hits: list[RouteHit]) -> list[str]:
    return [h.chunk_id for h in hits]


def close(index: KeywordIndex) -> None:
    if isinstance(index, _Closeable):
        index.close()


# A fixed permutation, so insertion order differs from chunk_id order on every engine.
_SHUFFLED = (7, 2, 11, 0, 9, 4, 1, 10, 5, 3, 8, 6)
_FILLER = "the quick brown fox jumps over the lazy dog while reading a manual about gardening"


class KeywordIndexContract:
    max_limit = 1000

    def test_is_a_keyword_index(self, index_factory: KeywordIndexFactory) -> None:
        assert isinstance(index_factory(), KeywordIndex)

    def test_new_index_is_empty(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        assert index.count() == 0
        assert index.search("anything", [ALLOWED], 10) == []
        assert index.ids_for_doc("doc-1") == []

    def test_upsert_then_search_finds_it(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "Kubernetes pods restart on failure"), kdoc("c2", _FILLER)])
        hits = index.search("kubernetes", [ALLOWED], 10)
        assert chunk_ids(hits) == ["c1"]
        assert hits[0].rank == 1
        assert hits[0].score > 0

    def test_hits_are_ranked_by_descending_score(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert(
            [
                kdoc("once", f"zeppelin {_FILLER}"),
                kdoc("twice", f"zeppelin zeppelin {_FILLER}"),
                kdoc("thrice", f"zeppelin zeppelin zeppelin {_FILLER}"),
            ]
        )
        hits = index.search("zeppelin", [ALLOWED], 10)
        assert chunk_ids(hits) == ["thrice", "twice", "once"]
        assert [h.rank for h in hits] == [1, 2, 3]
        assert hits[0].score > hits[1].score > hits[2].score

    def test_upsert_is_idempotent_and_replaces(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "original wording")])
        index.upsert([kdoc("c1", "original wording")])
        assert index.count() == 1
        index.upsert([kdoc("c1", "replacement text")])
        assert index.count() == 1
        assert index.search("original", [ALLOWED], 10) == []
        assert chunk_ids(index.search("replacement", [ALLOWED], 10)) == ["c1"]

    def test_same_chunk_twice_in_one_batch_keeps_the_last(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "first version"), kdoc("c1", "second version")])
        assert index.count() == 1
        assert index.search("first", [ALLOWED], 10) == []
        assert chunk_ids(index.search("second", [ALLOWED], 10)) == ["c1"]

    def test_delete_removes_from_search_and_count(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "shared term alpha"), kdoc("c2", "shared term beta")])
        index.delete(["c1", "never-existed"])
        assert index.count() == 1
        assert chunk_ids(index.search("shared", [ALLOWED], 10)) == ["c2"]
        index.delete([])
        assert index.count() == 1

    def test_ids_for_doc(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc(f"a{i}", "text", doc_id="doc-a") for i in (3, 1, 2)] + [kdoc("b1", "text", doc_id="doc-b")])
        assert index.ids_for_doc("doc-a") == ["a1", "a2", "a3"]
        assert index.ids_for_doc("doc-b") == ["b1"]
        assert index.ids_for_doc("doc-missing") == []
        index.delete(["a2"])
        assert index.ids_for_doc("doc-a") == ["a1", "a3"]

    def test_acl_filter_is_inside_the_search(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        # Denied chunks are short and repeat the term, so each outscores every allowed chunk: a
        # post-filter over the top 5 would return nothing.
        denied = [kdoc(f"d{i:02d}", "invoice invoice invoice", acl=DENIED) for i in range(30)]
        allowed = [kdoc(f"a{i}", f"invoice {_FILLER} {'extra ' * i}", acl=ALLOWED) for i in range(5)]
        index.upsert(denied + allowed)
        assert chunk_ids(index.search("invoice", [DENIED], 1)) == ["d00"]
        hits = index.search("invoice", [ALLOWED], 5)
        assert sorted(chunk_ids(hits)) == ["a0", "a1", "a2", "a3", "a4"]
        assert sorted(chunk_ids(index.search("invoice", [ALLOWED], 50))) == ["a0", "a1", "a2", "a3", "a4"]

    def test_source_filter_is_inside_the_search(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        # Every "tickets" chunk outscores every "wiki" one: a post-filter over the top 3 would return nothing.
        tickets = [kdoc(f"t{i:02d}", "invoice invoice invoice", source="tickets") for i in range(20)]
        wiki = [kdoc(f"w{i}", f"invoice {_FILLER} {'extra ' * i}", source="wiki") for i in range(4)]
        index.upsert(tickets + wiki)
        assert chunk_ids(index.search("invoice", [ALLOWED], 3)) == ["t00", "t01", "t02"]  # the positive control
        only_wiki = SearchFilters.build(sources=["wiki"])
        hits = index.search("invoice", [ALLOWED], 3, filters=only_wiki)
        assert chunk_ids(hits) == ["w0", "w1", "w2"]
        # The filter restricts the candidates without changing their scores.
        unfiltered = {h.chunk_id: h.score for h in index.search("invoice", [ALLOWED], 30)}
        assert [h.score for h in hits] == pytest.approx([unfiltered[h.chunk_id] for h in hits])
        assert index.search("invoice", [ALLOWED], 3, filters=SearchFilters.build(sources=["email"])) == []

    def test_date_filter_is_inside_the_search(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        old = datetime(2023, 5, 1, tzinfo=UTC)
        index.upsert(
            [kdoc(f"old{i}", "invoice invoice invoice", doc_time=old) for i in range(10)]
            + [
                kdoc("jan", f"invoice {_FILLER}", doc_time=datetime(2024, 1, 1, tzinfo=UTC)),
                kdoc("jun-end", f"invoice {_FILLER} extra", doc_time=datetime(2024, 6, 30, 23, 59, tzinfo=UTC)),
                kdoc("jul", f"invoice {_FILLER} extra extra", doc_time=datetime(2024, 7, 1, tzinfo=UTC)),
                kdoc("undated", "invoice invoice"),
            ]
        )
        in_2024_h1 = SearchFilters.build(date_from=date(2024, 1, 1), date_to=date(2024, 6, 30))
        assert chunk_ids(index.search("invoice", [ALLOWED], 2, filters=in_2024_h1)) == ["jan", "jun-end"]
        since = SearchFilters.build(date_from=date(2024, 6, 1))
        assert chunk_ids(index.search("invoice", [ALLOWED], 5, filters=since)) == ["jun-end", "jul"]
        found = chunk_ids(index.search("invoice", [ALLOWED], 20, filters=SearchFilters.build(as_of=date(2024, 1, 1))))
        assert sorted(found) == sorted([f"old{i}" for i in range(10)] + ["jan"])
        # Without a filter the undated chunk is a candidate like any other (the positive control).
        assert "undated" in chunk_ids(index.search("invoice", [ALLOWED], 20))

    def test_filters_never_widen_the_acl(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        when = datetime(2024, 3, 1, tzinfo=UTC)
        index.upsert(
            [
                kdoc("denied", "invoice", acl=DENIED, source="wiki", doc_time=when),
                kdoc("allowed", "invoice", source="wiki", doc_time=when),
            ]
        )
        wiki_2024 = SearchFilters.build(sources=["wiki"], date_from=date(2024, 1, 1), date_to=date(2024, 12, 31))
        assert chunk_ids(index.search("invoice", [ALLOWED], 10, filters=wiki_2024)) == ["allowed"]
        assert chunk_ids(index.search("invoice", [DENIED], 10, filters=wiki_2024)) == ["denied"]

    def test_acl_filter_accepts_several_classes(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert(
            [
                kdoc("a", "budget report", acl=ALLOWED),
                kdoc("b", "budget report", acl=ALLOWED_TOO),
                kdoc("d", "budget budget report", acl=DENIED),
            ]
        )
        assert chunk_ids(index.search("budget", [ALLOWED_TOO, ALLOWED], 10)) == ["a", "b"]

    def test_empty_acl_list_returns_nothing(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "visible text")])
        assert index.search("visible", [], 10) == []

    @pytest.mark.parametrize("query", ["", "   ", "?!&|()", "--- ::: ***"])
    def test_query_without_terms_returns_nothing(self, index_factory: KeywordIndexFactory, query: str) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "some text")])
        assert index.search(query, [ALLOWED], 10) == []

    def test_stemming(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "The documents were indexed overnight."), kdoc("c2", _FILLER)])
        assert chunk_ids(index.search("indexing", [ALLOWED], 10)) == ["c1"]
        assert chunk_ids(index.search("Document", [ALLOWED], 10)) == ["c1"]

    @pytest.mark.parametrize("query", HOSTILE_QUERIES)
    def test_hostile_queries_do_not_raise(self, index_factory: KeywordIndexFactory, query: str) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "foo bar secret word"), kdoc("d1", "foo bar secret word", acl=DENIED)])
        hits = index.search(query, [ALLOWED], 10)
        assert set(chunk_ids(hits)) <= {"c1"}

    def test_query_syntax_is_treated_as_text(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "compilers for C++ and foo bars"), kdoc("c2", _FILLER)])
        assert chunk_ids(index.search("C++ -foo:bar", [ALLOWED], 10)) == ["c1"]

    def test_title_match_outranks_body_match(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert(
            [
                kdoc("in-body", f"quarterly {_FILLER}", title="annual overview"),
                kdoc("in-title", f"annual {_FILLER}", title="quarterly overview"),
            ]
        )
        assert chunk_ids(index.search("quarterly", [ALLOWED], 10)) == ["in-title", "in-body"]

    def test_breadcrumb_is_searched(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", _FILLER, breadcrumb="Handbook > Onboarding"), kdoc("c2", _FILLER)])
        assert chunk_ids(index.search("onboarding", [ALLOWED], 10)) == ["c1"]

    def test_ties_are_broken_by_chunk_id(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        for i in _SHUFFLED:
            index.upsert([kdoc(f"tie-{i:02d}", "identical boilerplate paragraph")])
        first = index.search("boilerplate", [ALLOWED], 5)
        assert chunk_ids(first) == ["tie-00", "tie-01", "tie-02", "tie-03", "tie-04"]
        assert index.search("boilerplate", [ALLOWED], 5) == first

    def test_tie_order_does_not_depend_on_insertion_order(self, index_factory: KeywordIndexFactory) -> None:
        in_order, reversed_order = index_factory(), index_factory()
        docs = [kdoc(f"tie-{i:02d}", "identical boilerplate paragraph") for i in range(12)]
        in_order.upsert(docs)
        reversed_order.upsert(docs[::-1])
        assert in_order.search("paragraph", [ALLOWED], 4) == reversed_order.search("paragraph", [ALLOWED], 4)

    def test_limit_is_bounded(self, index_factory: KeywordIndexFactory) -> None:
        index = index_factory()
        index.upsert([kdoc("c1", "text")])
        assert chunk_ids(index.search("text", [ALLOWED], self.max_limit)) == ["c1"]
        for bad in (self.max_limit + 1, 0, -1):
            with pytest.raises(ValueError, match="limit"):
                index.search("text", [ALLOWED], bad)

    def test_persists_across_close_and_reopen(self, index_factory: KeywordIndexFactory, tmp_path: Path) -> None:
        where = tmp_path / "persisted-keywords"
        index = index_factory(where)
        index.upsert([kdoc("c1", "durable words", doc_id="doc-p"), kdoc("c2", "durable too", doc_id="doc-p")])
        index.delete(["c2"])
        close(index)
        reopened = index_factory(where)
        assert reopened.count() == 1
        assert reopened.ids_for_doc("doc-p") == ["c1"]
        assert chunk_ids(reopened.search("durable", [ALLOWED], 10)) == ["c1"]
        reopened.upsert([kdoc("c3", "more words")])
        close(reopened)
        assert index_factory(where).count() == 2
