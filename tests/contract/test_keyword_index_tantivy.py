"""`TantivyKeywordIndex` against the `KeywordIndex` contract, plus tantivy-specific behaviour."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy

from kgrag_adapters.tantivy.keyword_index import MAX_QUERY_TERMS, TantivyKeywordIndex
from kgrag_core.search import KeywordDoc
from kgrag_testing.contracts.keyword_index import (
    ALLOWED,
    KeywordIndexContract,
    KeywordIndexFactory,
    chunk_ids,
    kdoc,
)


@pytest.fixture
def index_factory(tmp_path: Path) -> Iterator[KeywordIndexFactory]:
    opened: list[TantivyKeywordIndex] = []

    def make(path: Path | None = None) -> TantivyKeywordIndex:
        index = TantivyKeywordIndex(path or tmp_path / f"fresh-{len(opened)}")
        opened.append(index)
        return index

    yield make
    for index in opened:
        index.close()


class TestTantivyKeywordIndexContract(KeywordIndexContract):
    pass


def test_query_analysis_matches_the_indexed_analyzer(tmp_path: Path) -> None:
    with TantivyKeywordIndex(tmp_path / "k") as index:
        assert index.query_terms("Indexing the INDEXED documents, indexing!") == ["index", "the", "document"]


def test_query_terms_are_bounded(tmp_path: Path) -> None:
    with TantivyKeywordIndex(tmp_path / "k") as index:
        query = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS * 3))
        assert len(index.query_terms(query)) == MAX_QUERY_TERMS
        index.upsert([kdoc("c1", "w0 w1")])
        assert chunk_ids(index.search(query, [ALLOWED], 10)) == ["c1"]


def test_rejects_a_bare_string_as_acl_list(tmp_path: Path) -> None:
    with TantivyKeywordIndex(tmp_path / "k") as index, pytest.raises(TypeError):
        index.search("text", ALLOWED, 10)


def test_closed_index_refuses_work(tmp_path: Path) -> None:
    index = TantivyKeywordIndex(tmp_path / "k")
    index.close()
    index.close()
    with pytest.raises(RuntimeError, match="closed"):
        index.count()


def test_another_process_sees_the_data_while_open(tmp_path: Path) -> None:
    where = tmp_path / "shared"
    with TantivyKeywordIndex(where) as index:
        index.upsert([kdoc("c1", "shared words"), kdoc("c2", "other words")])
        reader = (
            "import sys; from pathlib import Path\n"
            "from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex\n"
            "with TantivyKeywordIndex(Path(sys.argv[1])) as index:\n"
            "    print(index.count(), [h.chunk_id for h in index.search('shared', ['" + ALLOWED + "'], 5)])\n"
        )
        done = subprocess.run(
            [sys.executable, "-W", "error", "-c", reader, str(where)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        assert done.stdout.strip() == "2 ['c1']"
        # The writer lock is released between calls, so this process can still write afterwards.
        index.upsert([kdoc("c3", "shared again")])
        assert index.count() == 3


def _chunk(n: int, doc_id: str, text: str) -> KeywordDoc:
    return KeywordDoc(f"c{n}", doc_id, "acl_public", "title", "section", text, "test")


def test_a_purge_rewrites_only_the_segments_holding_deletions(tmp_path: Path) -> None:
    """The rewrite scope is the live documents sharing a segment with deleted chunks (ADR 0008), not the
    corpus: rewriting them (as the indexer does) drops those segments, and the deleted terms with them."""
    index = TantivyKeywordIndex(tmp_path / "kw")
    try:
        # One commit per upsert, one segment each: {alone}, {gone, neighbour}, {other}.
        index.upsert([_chunk(1, "alone", "alpha zalone0")])
        index.upsert([_chunk(2, "gone", "beta zgone0"), _chunk(3, "neighbour", "gamma zneighbour0")])
        index.upsert([_chunk(4, "other", "delta zother0")])
        assert index.rewrite_scope() == []  # nothing deleted yet
        index.delete(["c2"])
        assert index.doc_freq("zgone0") == 1  # the term outlives the delete: its segment still holds it
        scope = index.rewrite_scope()
        assert scope == ["neighbour"]  # not "alone" or "other": their segments hold no deletion
        index.upsert([_chunk(3, "neighbour", "gamma zneighbour0")])  # the caller's re-projection of the scope
        complete, _ = index.purge_deleted()
        assert complete and index.doc_freq("zgone0") == 0
        assert [index.doc_freq(t) for t in ("zalone0", "zneighbour0", "zother0")] == [1, 1, 1]  # control
        assert index.rewrite_scope() == []
        # A whole segment deleted is dropped at commit: nothing to rewrite.
        index.delete(["c4"])
        assert index.rewrite_scope() == [] and index.doc_freq("zother0") == 0
    finally:
        index.close()


def test_an_index_from_before_the_date_field_is_emptied_and_flagged(tmp_path: Path) -> None:
    where = tmp_path / "old"
    where.mkdir()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    old = tantivy.Index(builder.build(), path=str(where), reuse=True)
    writer = old.writer(heap_size=15_000_000, num_threads=1)
    writer.add_document(tantivy.Document(chunk_id="c-old"))
    writer.commit()
    writer.wait_merging_threads()
    del old
    index = TantivyKeywordIndex(where)
    # The wiring rewrites it from PostgreSQL when flagged (kgrag_runtime.wiring.open_embedded).
    assert index.needs_reprojection and index.count() == 0
    index.upsert([_chunk(1, "doc-1", "invoice")])
    assert index.count() == 1
    index.close()
    assert not TantivyKeywordIndex(where).needs_reprojection  # the positive control: today's schema


def test_dates_past_what_tantivy_stores_are_indexed_and_filtered_at_its_ends(tmp_path: Path) -> None:
    from datetime import UTC, date, datetime

    from kgrag_core.filters import SearchFilters

    def doc(chunk_id: str, year: int) -> KeywordDoc:
        moment = datetime(year, 1, 1, tzinfo=UTC)
        return KeywordDoc(chunk_id, chunk_id, "acl_a", "t", "", "zeppelin log", "wiki", doc_time=moment)

    with TantivyKeywordIndex(tmp_path / "k") as index:
        index.upsert([doc("far", 2300), doc("near", 2024), doc("old", 1500)])

        def found(**bounds: date) -> set[str]:
            return {h.chunk_id for h in index.search("zeppelin", ["acl_a"], 10, filters=SearchFilters.build(**bounds))}

        # Bounds tantivy cannot hold answer as their clamped ends do, never an engine error.
        assert found(date_from=date(2263, 1, 1)) == {"far"}
        assert found(date_to=date(9999, 12, 30)) == {"far", "near", "old"}
        assert found(date_to=date(2200, 1, 1)) == {"near", "old"}
        assert found(date_to=date(1600, 1, 1)) == {"old"}
        assert found(date_from=date(1, 1, 1), date_to=date(2100, 1, 1)) == {"near", "old"}
