"""The TextGraphStore contract: blind node keys, two-hop caller-visible neighbourhoods, replacement,
deletion with the document's chunks, the specificity cap and the edge bound.

A test class provides `text_graph` (the store) and `documents` (the document store of the same database:
edges hang off its chunks).
"""

from __future__ import annotations

from collections.abc import Sequence

from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk
from kgrag_core.ingest import DeletionRecord
from kgrag_core.text_graph.model import MentionEdge, MentionKind, SynonymEdge
from kgrag_core.text_graph.ports import NewName, TextGraphStore
from kgrag_testing.contracts.document_store import ALICE, ENG, FullStore, commit

SECRET = AclClass.of(["user:mallory-only"])


def link(graph: TextGraphStore, chunks: Sequence[Chunk], names: Sequence[Sequence[str]], acl: AclClass = ENG) -> None:
    """Each chunk names the given phrases (as entities); replaces the chunks' document's edges."""
    keys = graph.node_keys(sorted({n for ns in names for n in ns}))
    edges = [
        MentionEdge(c.chunk_id, c.doc_id, acl.acl_class_id, keys[n], MentionKind.ENTITY)
        for c, ns in zip(chunks, names, strict=True)
        for n in ns
    ]
    graph.replace_document(chunks[0].doc_id, edges)


def hood(
    graph: TextGraphStore,
    nodes: Sequence[str],
    allowed: Sequence[AclClass],
    *,
    max_share: float = 1.0,
    min_cap: int = 100,
    max_edges: int = 1000,
) -> set[tuple[str, str]]:
    keys = graph.node_keys(nodes)
    found = graph.neighbourhood(
        [keys[n] for n in nodes],
        [],
        [a.acl_class_id for a in allowed],
        max_share=max_share,
        min_cap=min_cap,
        max_edges=max_edges,
    )
    return {(e.chunk_id, e.node_key) for e in found.edges}


class TextGraphStoreContract:
    def test_implements_the_port(self, text_graph: TextGraphStore) -> None:
        assert isinstance(text_graph, TextGraphStore)

    def test_node_keys_are_stable_blind_and_distinct(self, text_graph: TextGraphStore) -> None:
        keys = text_graph.node_keys(["atlas", "bank of england"])
        assert keys == text_graph.node_keys(["bank of england", "atlas"])
        assert keys["atlas"] != keys["bank of england"]
        assert all(phrase not in key for phrase, key in keys.items())

    def test_the_neighbourhood_reaches_two_hops(self, text_graph: TextGraphStore, documents: FullStore) -> None:
        a = commit(documents, "doc-a", ["Atlas runs on Orion.", "Nothing here."])
        b = commit(documents, "doc-b", ["Orion is hosted by Vega."])
        c = commit(documents, "doc-c", ["Vega sits in Oslo."])
        link(text_graph, a, [["atlas", "orion"], ["unrelated"]])
        link(text_graph, b, [["orion", "vega"]])
        link(text_graph, c, [["vega", "oslo"]])
        found = hood(text_graph, ["atlas"], [ENG])
        chunks = {chunk for chunk, _ in found}
        # atlas -> a0 -> orion -> b0: the second hop's passage and its nodes' edges (vega -> c0) are in.
        assert {a[0].chunk_id, b[0].chunk_id} <= chunks
        assert a[1].chunk_id not in chunks  # shares no node with the seeds' passages

    def test_edges_from_unreadable_chunks_are_never_returned(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        open_doc = commit(documents, "doc-open", ["Atlas runs on Orion."])
        secret = commit(documents, "doc-secret", ["Atlas is being sold to Orion."], acl=SECRET)
        link(text_graph, open_doc, [["atlas", "orion"]])
        link(text_graph, secret, [["atlas", "orion"]], acl=SECRET)
        outsider = hood(text_graph, ["atlas"], [ENG])
        insider = hood(text_graph, ["atlas"], [ENG, SECRET])
        assert {c for c, _ in outsider} == {open_doc[0].chunk_id}
        assert {c for c, _ in insider} == {open_doc[0].chunk_id, secret[0].chunk_id}  # positive control
        keys = text_graph.node_keys(["atlas"])
        counted = text_graph.neighbourhood([keys["atlas"]], [], [ENG.acl_class_id], max_share=1, min_cap=9, max_edges=9)
        assert counted.passages == 1 and all(e.df == 1 for e in counted.edges)  # specificity over what it sees
        assert hood(text_graph, ["atlas"], []) == set()
        assert hood(text_graph, ["atlas"], [ALICE]) == set()

    def test_the_chunks_class_decides_even_when_the_edges_copy_disagrees(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        # An edge written with a stale class (its chunk re-permissioned while the graph was being built): the
        # chunk's own class decides who may walk it.
        open_doc = commit(documents, "doc-open-copy", ["Atlas runs on Orion."])
        secret = commit(documents, "doc-secret-copy", ["Atlas is being sold to Orion."], acl=SECRET)
        link(text_graph, open_doc, [["atlas", "orion"]])
        link(text_graph, secret, [["atlas", "orion"]], acl=ENG)
        assert {c for c, _ in hood(text_graph, ["atlas"], [ENG])} == {open_doc[0].chunk_id}
        insider = hood(text_graph, ["atlas"], [ENG, SECRET])
        assert {c for c, _ in insider} == {open_doc[0].chunk_id, secret[0].chunk_id}  # positive control

    def test_a_node_named_by_too_many_passages_connects_nothing(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        chunks = commit(documents, "doc-many", [f"Company note {i} about item{i}." for i in range(6)])
        link(text_graph, chunks, [["company", f"item{i}"] for i in range(6)])
        capped = hood(text_graph, ["item1"], [ENG], max_share=0.0, min_cap=3)
        key = text_graph.node_keys(["company"])["company"]
        assert capped and all(node != key for _, node in capped)
        assert any(node == key for _, node in hood(text_graph, ["item1"], [ENG], min_cap=10))

    def test_replacing_a_document_replaces_its_edges_and_reports_new_nodes_once(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        chunks = commit(documents, "doc-r", ["Atlas and Orion."])
        keys = text_graph.node_keys(["atlas", "orion"])
        edge = MentionEdge(chunks[0].chunk_id, "doc-r", ENG.acl_class_id, keys["atlas"], MentionKind.ENTITY)
        assert text_graph.replace_document("doc-r", [edge]) == [keys["atlas"]]
        assert text_graph.replace_document("doc-r", [edge]) == []
        other = MentionEdge(chunks[0].chunk_id, "doc-r", ENG.acl_class_id, keys["orion"], MentionKind.ENTITY)
        text_graph.replace_document("doc-r", [other])
        assert hood(text_graph, ["atlas"], [ENG]) == set()
        assert hood(text_graph, ["orion"], [ENG]) == {(chunks[0].chunk_id, keys["orion"])}

    def test_deleting_a_document_removes_its_edges(self, text_graph: TextGraphStore, documents: FullStore) -> None:
        gone = commit(documents, "doc-gone", ["Atlas and Orion."])
        kept = commit(documents, "doc-kept", ["Atlas again."])
        link(text_graph, gone, [["atlas", "orion"]])
        link(text_graph, kept, [["atlas"]])
        text_graph.delete_document("doc-gone")
        assert {c for c, _ in hood(text_graph, ["atlas"], [ENG])} == {kept[0].chunk_id}
        link(text_graph, gone, [["atlas", "orion"]])
        # The deletion path: the document store deletes the chunks, and their edges go with them.
        documents.mark_deleted("doc-gone", DeletionRecord("doc-gone", (gone[0].chunk_id,), (), ("postgres",)))
        assert {c for c, _ in hood(text_graph, ["atlas"], [ENG])} == {kept[0].chunk_id}

    def test_titles_are_marked(self, text_graph: TextGraphStore, documents: FullStore) -> None:
        chunks = commit(documents, "doc-t", ["Atlas handbook."])
        keys = text_graph.node_keys(["atlas handbook", "atlas"])
        edge = MentionEdge(chunks[0].chunk_id, "doc-t", ENG.acl_class_id, keys["atlas handbook"], MentionKind.TITLE)
        text_graph.replace_document("doc-t", [edge], titled=[keys["atlas handbook"]])
        assert text_graph.titled(list(keys.values())) == {keys["atlas handbook"]}

    def test_the_edge_bound_truncates(self, text_graph: TextGraphStore, documents: FullStore) -> None:
        chunks = commit(documents, "doc-big", [f"Atlas part {i}." for i in range(5)])
        link(text_graph, chunks, [["atlas"] for _ in range(5)])
        keys = text_graph.node_keys(["atlas"])
        found = text_graph.neighbourhood([keys["atlas"]], [], [ENG.acl_class_id], max_share=1, min_cap=9, max_edges=3)
        assert len(found.edges) == 3 and found.truncated

    def test_similar_names_share_a_word_and_are_stored_once(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        chunks = commit(documents, "doc-s", ["Kestrel Pharma.", "Kestrel Pharmaceuticals.", "Harbor."])
        link(text_graph, chunks, [["kestrel pharma"], ["kestrel pharmaceuticals"], ["harbor"]])
        keys = text_graph.node_keys(["kestrel pharma", "kestrel pharmaceuticals", "harbor"])
        near, far = (1.0, 0.0, 0.0), (0.95, 0.31, 0.0)  # cosine 0.95 with `near`
        first = [
            NewName(keys["kestrel pharma"], ("kestrel", "pharma"), near, chunks[0].chunk_id, "doc-s"),
            NewName(keys["harbor"], ("harbor",), far, chunks[2].chunk_id, "doc-s"),  # same vector, no shared word
        ]
        assert text_graph.similar_names(first, 0.9) == []
        later = NewName(
            keys["kestrel pharmaceuticals"], ("kestrel", "pharmaceuticals"), far, chunks[1].chunk_id, "doc-s"
        )
        [(new, old, cosine)] = text_graph.similar_names([later], 0.9)
        assert (new, old) == (keys["kestrel pharmaceuticals"], keys["kestrel pharma"]) and 0.94 < cosine < 0.96
        assert text_graph.similar_names([later], 0.99) == []
        # A deleted document's names are compared no more (their vectors go with its chunks, and are sealed).
        documents.mark_deleted("doc-s", DeletionRecord("doc-s", tuple(c.chunk_id for c in chunks), (), ("postgres",)))
        commit(documents, "doc-s2", ["Kestrel Pharmacy."])
        [chunk] = documents.chunks_of("doc-s2")
        link(text_graph, [chunk], [["kestrel pharmacy"]])
        again = NewName(
            text_graph.node_keys(["kestrel pharmacy"])["kestrel pharmacy"],
            ("kestrel", "pharmacy"),
            near,
            chunk.chunk_id,
            "doc-s2",
        )
        assert text_graph.similar_names([again], 0.5) == []

    def test_similar_names_of_one_call_are_compared_with_each_other(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        chunks = commit(documents, "doc-b", ["Kestrel Pharma.", "Kestrel Pharmaceuticals.", "Harbor."])
        link(text_graph, chunks, [["kestrel pharma"], ["kestrel pharmaceuticals"], ["harbor"]])
        keys = text_graph.node_keys(["kestrel pharma", "kestrel pharmaceuticals", "harbor"])
        near, far = (1.0, 0.0, 0.0), (0.95, 0.31, 0.0)
        batch = [
            NewName(keys["kestrel pharma"], ("kestrel", "pharma"), near, chunks[0].chunk_id, "doc-b"),
            NewName(keys["harbor"], ("harbor",), near, chunks[2].chunk_id, "doc-b"),  # same vector, no shared word
            NewName(keys["kestrel pharmaceuticals"], ("kestrel", "pharmaceuticals"), far, chunks[1].chunk_id, "doc-b"),
        ]
        [(new, old, cosine)] = text_graph.similar_names(batch, 0.9)
        assert (new, old) == (keys["kestrel pharmaceuticals"], keys["kestrel pharma"]) and 0.94 < cosine < 0.96
        # Stored once each: a later call compares with them, and not with itself.
        again = NewName(keys["kestrel pharma"], ("kestrel", "pharma"), near, chunks[0].chunk_id, "doc-b")
        assert {o for _, o, _ in text_graph.similar_names([again], 0.9)} == {keys["kestrel pharmaceuticals"]}

    def test_a_synonym_joins_the_walk_only_for_readers_of_its_evidence(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        open_doc = commit(documents, "doc-k1", ["Kestrel Pharma signed."])
        other = commit(documents, "doc-k2", ["Kestrel Pharmaceuticals renewed."])
        secret = commit(documents, "doc-k3", ["Kestrel Pharmaceuticals, internally."], acl=SECRET)
        link(text_graph, open_doc, [["kestrel pharma"]])
        link(text_graph, other, [["kestrel pharmaceuticals"]])
        keys = text_graph.node_keys(["kestrel pharma", "kestrel pharmaceuticals"])
        a, b = keys["kestrel pharma"], keys["kestrel pharmaceuticals"]
        text_graph.add_synonyms([SynonymEdge(b, a, secret[0].chunk_id, SECRET.acl_class_id, 0.9)])
        assert {c for c, _ in hood(text_graph, ["kestrel pharma"], [ENG])} == {open_doc[0].chunk_id}
        insider = {c for c, _ in hood(text_graph, ["kestrel pharma"], [ENG, SECRET])}
        assert insider == {open_doc[0].chunk_id, other[0].chunk_id}  # positive control: through the synonym

    def test_counts_follow_deletion_and_re_permissioning(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        # A node's passage count (its specificity) is what the caller can read now: a deleted passage leaves
        # it, and a re-permissioned one moves to the readers of its new class at once.
        gone = commit(documents, "doc-c1", ["Atlas and Orion."])
        moved = commit(documents, "doc-c2", ["Atlas again, with Orion."])
        kept = commit(documents, "doc-c3", ["Atlas once more, with Orion."])
        for chunks in (gone, moved, kept):
            link(text_graph, chunks, [["atlas", "orion"]])
        keys = text_graph.node_keys(["atlas"])

        def counted(allowed: Sequence[AclClass]) -> set[tuple[str, int]]:
            found = text_graph.neighbourhood(
                [keys["atlas"]], [], [a.acl_class_id for a in allowed], max_share=1, min_cap=9, max_edges=99
            )
            return {(e.chunk_id, e.df) for e in found.edges if e.node_key == keys["atlas"]}

        assert counted([ENG]) == {(c[0].chunk_id, 3) for c in (gone, moved, kept)}
        documents.mark_deleted("doc-c1", DeletionRecord("doc-c1", (gone[0].chunk_id,), (), ("postgres",)))
        assert counted([ENG]) == {(c[0].chunk_id, 2) for c in (moved, kept)}
        assert documents.update_acl("doc-c2", SECRET)
        assert counted([ENG]) == {(kept[0].chunk_id, 1)}
        assert counted([SECRET]) == {(moved[0].chunk_id, 1)}  # positive control: its new readers see it
        assert counted([ENG, SECRET]) == {(c[0].chunk_id, 2) for c in (moved, kept)}

    def test_a_batch_replaces_each_document_and_reports_a_new_node_to_its_first(
        self, text_graph: TextGraphStore, documents: FullStore
    ) -> None:
        one = commit(documents, "doc-b1", ["Atlas and Orion."])
        two = commit(documents, "doc-b2", ["Orion and Vega."])
        keys = text_graph.node_keys(["atlas", "orion", "vega"])

        def edges(chunks: Sequence[Chunk], names: Sequence[str]) -> list[MentionEdge]:
            c = chunks[0]
            return [MentionEdge(c.chunk_id, c.doc_id, ENG.acl_class_id, keys[n], MentionKind.ENTITY) for n in names]

        batch: list[tuple[str, Sequence[MentionEdge], Sequence[str]]] = [
            ("doc-b1", edges(one, ["atlas", "orion"]), []),
            ("doc-b2", edges(two, ["orion", "vega"]), []),
        ]
        assert text_graph.replace_documents(batch) == [sorted([keys["atlas"], keys["orion"]]), [keys["vega"]]]
        assert {c for c, _ in hood(text_graph, ["vega"], [ENG])} == {one[0].chunk_id, two[0].chunk_id}
        # Replaced, not added to: doc-b1 now names only Vega, so Atlas leads nowhere.
        again: list[tuple[str, Sequence[MentionEdge], Sequence[str]]] = [
            ("doc-b1", edges(one, ["vega"]), [keys["vega"]]),
            ("doc-b2", edges(two, ["vega"]), []),
        ]
        assert text_graph.replace_documents(again) == [[], []]
        assert hood(text_graph, ["atlas"], [ENG]) == set()
        assert text_graph.titled([keys["vega"], keys["atlas"]]) == {keys["vega"]}
