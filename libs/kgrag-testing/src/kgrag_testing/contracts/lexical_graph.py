"""Contract suite for `LexicalGraph` adapters.

Subclass `LexicalGraphContract` in a `Test*` class and provide two fixtures:

- `graph`: a graph that is EMPTY when the test starts (no Document, no Chunk, no relationship), closed or
  cleaned up at teardown;
- `graph_probe`: a `LexicalGraphProbe` reading what the port does not return, about the same graph: the
  run ID on each chunk's FROM_DOCUMENT relationship.

Every test starts from the empty graph, so the counts are exact. Documents are built with
`make_document` (one chunk per section, chunk IDs from `kgrag_core.ids.chunk_id_for`), so a changed
section is a new chunk ID and an unchanged one keeps its ID, as in production.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

import pytest

from kgrag_core.documents import Chunk, StoredDocument
from kgrag_core.ports import LexicalGraph
from kgrag_testing.contracts.document_store import make_document

RUN_1 = "run-0001"
RUN_2 = "run-0002"

EMPTY = {"documents": 0, "chunks": 0, "next_chunk": 0, "from_document": 0}


class LexicalGraphProbe(Protocol):
    def from_document_run_ids(self, doc_id: str) -> dict[str, list[str]]:
        """chunk_id -> run_id of each FROM_DOCUMENT relationship from that chunk to the document."""
        ...


def counts(documents: int, chunks: int, next_chunk: int, from_document: int) -> dict[str, int]:
    return {"documents": documents, "chunks": chunks, "next_chunk": next_chunk, "from_document": from_document}


def sections(prefix: str, n: int) -> list[str]:
    return [f"{prefix} section {i} text" for i in range(n)]


def ids(chunks: Sequence[Chunk]) -> list[str]:
    """Chunk IDs in seq order."""
    return [c.chunk_id for c in sorted(chunks, key=lambda c: c.seq)]


def upsert(
    graph: LexicalGraph, doc_id: str, texts: Sequence[str], *, run_id: str = RUN_1, version: int = 1
) -> tuple[StoredDocument, list[Chunk]]:
    doc, chunks = make_document(doc_id, texts, version=version)
    graph.upsert_document(doc, chunks, run_id)
    return doc, chunks


class LexicalGraphContract:
    # --- basics ---------------------------------------------------------------------------------------

    def test_is_a_lexical_graph(self, graph: LexicalGraph) -> None:
        assert isinstance(graph, LexicalGraph)

    def test_new_graph_is_empty(self, graph: LexicalGraph) -> None:
        assert graph.counts() == EMPTY
        assert graph.chunk_ids("doc-1") == []

    def test_upsert_creates_nodes_and_both_relationship_types(self, graph: LexicalGraph) -> None:
        upsert(graph, "doc-1", sections("a", 3))
        assert graph.counts() == counts(documents=1, chunks=3, next_chunk=2, from_document=3)

    def test_single_chunk_document_has_no_next_chunk(self, graph: LexicalGraph) -> None:
        _, chunks = upsert(graph, "doc-1", ["only"])
        assert graph.counts() == counts(1, 1, 0, 1)
        assert graph.chunk_ids("doc-1") == ids(chunks)

    def test_document_without_chunks(self, graph: LexicalGraph) -> None:
        doc, _ = make_document("doc-1", ["x"])
        graph.upsert_document(doc, [], RUN_1)
        assert graph.counts() == counts(1, 0, 0, 0)
        assert graph.chunk_ids("doc-1") == []

    # --- chain order ----------------------------------------------------------------------------------

    def test_next_chunk_order_equals_seq_order(self, graph: LexicalGraph) -> None:
        doc, chunks = make_document("doc-1", sections("a", 12))
        # Given out of order: the chain follows seq, not the order of the argument.
        shuffled = [chunks[i] for i in (7, 2, 11, 0, 9, 4, 1, 10, 5, 3, 8, 6)]
        graph.upsert_document(doc, shuffled, RUN_1)
        assert graph.chunk_ids("doc-1") == ids(chunks)
        assert graph.counts() == counts(1, 12, 11, 12)

    def test_chain_links_consecutive_seqs_across_gaps(self, graph: LexicalGraph) -> None:
        doc, chunks = make_document("doc-1", sections("a", 4))
        gapped = [dataclasses.replace(c, seq=s) for c, s in zip(chunks, (3, 10, 11, 40), strict=True)]
        graph.upsert_document(doc, list(reversed(gapped)), RUN_1)
        assert graph.chunk_ids("doc-1") == ids(gapped)
        assert graph.counts() == counts(1, 4, 3, 4)

    def test_long_document_chain(self, graph: LexicalGraph) -> None:
        _, chunks = upsert(graph, "doc-1", sections("long", 300))
        assert graph.chunk_ids("doc-1") == ids(chunks)
        assert graph.counts() == counts(1, 300, 299, 300)

    def test_chains_of_documents_stay_apart(self, graph: LexicalGraph) -> None:
        _, a = upsert(graph, "doc-a", sections("a", 3))
        _, b = upsert(graph, "doc-b", sections("b", 5))
        assert graph.chunk_ids("doc-a") == ids(a)
        assert graph.chunk_ids("doc-b") == ids(b)
        assert graph.counts() == counts(2, 8, 2 + 4, 8)

    # --- re-upsert --------------------------------------------------------------------------------------

    def test_reupsert_with_one_chunk_changed_replaces_exactly_that_chunk(self, graph: LexicalGraph) -> None:
        _, old = upsert(graph, "doc-1", ["alpha", "beta", "gamma", "delta"])
        _, new = upsert(graph, "doc-1", ["alpha", "BETA v2", "gamma", "delta"], run_id=RUN_2, version=2)
        old_ids, new_ids = ids(old), ids(new)
        assert [i for i, (o, n) in enumerate(zip(old_ids, new_ids, strict=True)) if o != n] == [1]
        # Relinked: the chain runs through the new chunk, in seq order, and the old one is gone.
        assert graph.chunk_ids("doc-1") == new_ids
        assert old_ids[1] not in graph.chunk_ids("doc-1")
        assert graph.counts() == counts(1, 4, 3, 4)

    def test_reupsert_with_fewer_chunks_removes_the_stale_ones(self, graph: LexicalGraph) -> None:
        upsert(graph, "doc-1", sections("a", 6))
        _, new = upsert(graph, "doc-1", ["a section 0 text", "brand new"], run_id=RUN_2, version=2)
        assert graph.chunk_ids("doc-1") == ids(new)
        assert graph.counts() == counts(1, 2, 1, 2)

    def test_reupsert_with_more_chunks_extends_the_chain(self, graph: LexicalGraph) -> None:
        upsert(graph, "doc-1", sections("a", 2))
        _, new = upsert(graph, "doc-1", ["first", *sections("a", 2), "last"], run_id=RUN_2, version=2)
        assert graph.chunk_ids("doc-1") == ids(new)
        assert graph.counts() == counts(1, 4, 3, 4)

    def test_reupsert_with_reordered_chunks_relinks_the_chain(self, graph: LexicalGraph) -> None:
        doc, chunks = upsert(graph, "doc-1", sections("a", 5))
        # Same chunk IDs, new positions (a section moved): the chain must follow the new seqs.
        reordered = [dataclasses.replace(c, seq=s) for c, s in zip(chunks, (4, 0, 3, 1, 2), strict=True)]
        graph.upsert_document(doc, reordered, RUN_2)
        assert graph.chunk_ids("doc-1") == ids(reordered)
        assert graph.counts() == counts(1, 5, 4, 5)

    def test_reupsert_to_no_chunks_keeps_the_document(self, graph: LexicalGraph) -> None:
        doc, _ = upsert(graph, "doc-1", sections("a", 3))
        graph.upsert_document(doc, [], RUN_2)
        assert graph.counts() == counts(1, 0, 0, 0)
        assert graph.chunk_ids("doc-1") == []

    def test_reupsert_leaves_other_documents_alone(self, graph: LexicalGraph) -> None:
        _, other = upsert(graph, "doc-other", sections("o", 3))
        upsert(graph, "doc-1", sections("a", 3))
        upsert(graph, "doc-1", ["x", "y"], run_id=RUN_2, version=2)
        assert graph.chunk_ids("doc-other") == ids(other)
        assert graph.counts() == counts(2, 5, 2 + 1, 5)

    def test_same_upsert_twice_is_idempotent(self, graph: LexicalGraph) -> None:
        doc, chunks = make_document("doc-1", sections("a", 7))
        graph.upsert_document(doc, chunks, RUN_1)
        first = (graph.counts(), graph.chunk_ids("doc-1"))
        graph.upsert_document(doc, chunks, RUN_1)
        assert (graph.counts(), graph.chunk_ids("doc-1")) == first
        assert first == (counts(1, 7, 6, 7), ids(chunks))

    # --- run IDs ----------------------------------------------------------------------------------------

    def test_run_id_is_recorded_on_from_document(self, graph: LexicalGraph, graph_probe: LexicalGraphProbe) -> None:
        _, chunks = upsert(graph, "doc-1", sections("a", 3), run_id=RUN_1)
        assert graph_probe.from_document_run_ids("doc-1") == {c.chunk_id: [RUN_1] for c in chunks}

    def test_a_new_run_updates_the_run_id_without_adding_relationships(
        self, graph: LexicalGraph, graph_probe: LexicalGraphProbe
    ) -> None:
        doc, chunks = upsert(graph, "doc-1", sections("a", 3), run_id=RUN_1)
        graph.upsert_document(doc, chunks, RUN_2)
        # Exactly one FROM_DOCUMENT per chunk, carrying the latest run.
        assert graph_probe.from_document_run_ids("doc-1") == {c.chunk_id: [RUN_2] for c in chunks}
        assert graph.counts() == counts(1, 3, 2, 3)

    def test_empty_run_id_is_rejected(self, graph: LexicalGraph) -> None:
        doc, chunks = make_document("doc-1", ["x"])
        with pytest.raises(ValueError, match="run_id"):
            graph.upsert_document(doc, chunks, "")
        assert graph.counts() == EMPTY

    # --- invalid input ------------------------------------------------------------------------------------

    def test_chunk_of_another_document_is_rejected(self, graph: LexicalGraph) -> None:
        doc, chunks = make_document("doc-1", ["one", "two"])
        with pytest.raises(ValueError, match="belongs to"):
            graph.upsert_document(doc, [chunks[0], dataclasses.replace(chunks[1], doc_id="doc-2")], RUN_1)
        assert graph.counts() == EMPTY

    def test_duplicate_chunk_ids_or_seqs_are_rejected(self, graph: LexicalGraph) -> None:
        doc, chunks = make_document("doc-1", ["one", "two"])
        with pytest.raises(ValueError, match="twice"):
            graph.upsert_document(doc, [chunks[0], chunks[0]], RUN_1)
        with pytest.raises(ValueError, match="twice"):
            graph.upsert_document(doc, [chunks[0], dataclasses.replace(chunks[1], seq=chunks[0].seq)], RUN_1)
        assert graph.counts() == EMPTY

    # --- delete -----------------------------------------------------------------------------------------------

    def test_delete_removes_everything_of_the_document_and_keeps_the_others(self, graph: LexicalGraph) -> None:
        upsert(graph, "doc-1", sections("a", 4))
        _, kept = upsert(graph, "doc-2", sections("b", 3))
        assert graph.delete_document("doc-1") == 4
        assert graph.chunk_ids("doc-1") == []
        assert graph.chunk_ids("doc-2") == ids(kept)
        assert graph.counts() == counts(1, 3, 2, 3)

    def test_delete_of_an_unknown_document_returns_zero(self, graph: LexicalGraph) -> None:
        upsert(graph, "doc-1", sections("a", 2))
        assert graph.delete_document("doc-unknown") == 0
        assert graph.counts() == counts(1, 2, 1, 2)

    def test_delete_twice_returns_zero_the_second_time(self, graph: LexicalGraph) -> None:
        upsert(graph, "doc-1", sections("a", 2))
        assert graph.delete_document("doc-1") == 2
        assert graph.delete_document("doc-1") == 0
        assert graph.counts() == EMPTY

    def test_delete_of_a_document_without_chunks(self, graph: LexicalGraph) -> None:
        doc, _ = make_document("doc-1", ["x"])
        graph.upsert_document(doc, [], RUN_1)
        assert graph.delete_document("doc-1") == 0
        assert graph.counts() == EMPTY

    def test_upsert_after_delete_recreates_the_document(self, graph: LexicalGraph) -> None:
        doc, chunks = upsert(graph, "doc-1", sections("a", 3))
        graph.delete_document("doc-1")
        graph.upsert_document(doc, chunks, RUN_2)
        assert graph.chunk_ids("doc-1") == ids(chunks)
        assert graph.counts() == counts(1, 3, 2, 3)
