"""Contract suites for the graph projections' targets (kgrag_core.handlers.community_projection and
.text_graph_projection): what a sync may rely on, whatever engine holds the projection.

Subclass `CommunityProjectionContract` with a `community_projection` fixture, and
`TextGraphProjectionContract` with a `text_graph_projection` fixture: each a fresh, empty projection."""

from __future__ import annotations

from dataclasses import replace

from kgrag_core.handlers.community_projection import CommunityHeader, CommunityProjection, header_of
from kgrag_core.handlers.text_graph_projection import (
    ProjectedMention,
    ProjectedSynonym,
    TextGraphDocument,
    TextGraphProjection,
)
from kgrag_core.text_graph.model import MentionKind
from kgrag_testing.contracts.community_store import ALL, CHILD_A1, CHILD_A2, TOP_A, TOP_B


def _headers(projection: CommunityProjection) -> list[CommunityHeader]:
    return sorted(projection.community_headers(), key=lambda h: h.community_id)


class CommunityProjectionContract:
    def test_implements_the_port(self, community_projection: CommunityProjection) -> None:
        assert isinstance(community_projection, CommunityProjection)

    def test_put_round_trips_headers_and_members(self, community_projection: CommunityProjection) -> None:
        assert community_projection.community_headers() == []
        community_projection.put_communities(ALL)
        assert _headers(community_projection) == sorted((header_of(c) for c in ALL), key=lambda h: h.community_id)
        for c in ALL:
            assert community_projection.members(c.community_id) == list(c.member_ids)

    def test_put_again_updates_in_place(self, community_projection: CommunityProjection) -> None:
        community_projection.put_communities(ALL)
        newer = replace(TOP_A, stale=True, graph_version=TOP_A.graph_version + 1, content_hash="changed")
        community_projection.put_communities([newer])
        community_projection.put_communities([newer])  # idempotent
        want = [header_of(c) for c in (newer, CHILD_A1, CHILD_A2, TOP_B)]
        assert _headers(community_projection) == sorted(want, key=lambda h: h.community_id)
        assert community_projection.members(TOP_A.community_id) == list(TOP_A.member_ids)

    def test_drop_removes_only_what_it_names(self, community_projection: CommunityProjection) -> None:
        community_projection.put_communities(ALL)
        community_projection.drop_communities([TOP_B.community_id, CHILD_A2.community_id])
        want = [header_of(c) for c in (TOP_A, CHILD_A1)]
        assert _headers(community_projection) == sorted(want, key=lambda h: h.community_id)
        assert community_projection.members(TOP_B.community_id) == []
        assert community_projection.members(TOP_A.community_id) == list(TOP_A.member_ids)  # positive control
        community_projection.drop_communities([])  # nothing named, nothing removed
        assert len(community_projection.community_headers()) == 2

    def test_a_child_written_without_its_parent_leaves_a_header_matching_nothing(
        self, community_projection: CommunityProjection
    ) -> None:
        # The parent vanished from the source between a sync's two reads: whatever stands for it must not
        # look like a copy of it (the next sync then rewrites or removes it).
        community_projection.put_communities([CHILD_A1])
        headers = {h.community_id: h for h in community_projection.community_headers()}
        assert headers[CHILD_A1.community_id] == header_of(CHILD_A1)
        assert headers.get(TOP_A.community_id, header_of(CHILD_A1)) != header_of(TOP_A)
        community_projection.drop_communities([TOP_A.community_id, CHILD_A1.community_id])
        assert community_projection.community_headers() == []


def _doc(doc_id: str, chunk: str, nodes: tuple[str, ...], acl: str = "acl-eng") -> TextGraphDocument:
    mentions = tuple(ProjectedMention(chunk, n, acl, MentionKind.ENTITY, 1.0) for n in sorted(nodes))
    return TextGraphDocument(doc_id, mentions, (), frozenset())


class TextGraphProjectionContract:
    def test_implements_the_port(self, text_graph_projection: TextGraphProjection) -> None:
        assert isinstance(text_graph_projection, TextGraphProjection)

    def test_replace_round_trips_edges_with_their_evidence(self, text_graph_projection: TextGraphProjection) -> None:
        doc = TextGraphDocument(
            "doc-a",
            (
                ProjectedMention("c-a1", "n-atlas", "acl-eng", MentionKind.TITLE, 1.0),
                ProjectedMention("c-a1", "n-orion", "acl-eng", MentionKind.ENTITY, 1.0),
                ProjectedMention("c-a2", "n-orion", "acl-hr", MentionKind.PHRASE, 0.5),
            ),
            (ProjectedSynonym("n-orion", "n-orion-cloud", "c-a2", "acl-hr", 0.9),),
            frozenset({"n-atlas"}),
        )
        text_graph_projection.replace_text_graph(doc)
        assert text_graph_projection.text_graph_of("doc-a") == doc
        assert text_graph_projection.text_graph_documents() == ["doc-a"]

    def test_replace_is_exact_and_an_empty_document_is_removed(
        self, text_graph_projection: TextGraphProjection
    ) -> None:
        text_graph_projection.replace_text_graph(_doc("doc-a", "c-a1", ("n-atlas", "n-orion")))
        other = _doc("doc-b", "c-b1", ("n-orion", "n-vega"))
        text_graph_projection.replace_text_graph(other)
        newer = _doc("doc-a", "c-a9", ("n-orion",))
        text_graph_projection.replace_text_graph(newer)
        text_graph_projection.replace_text_graph(newer)  # idempotent
        assert text_graph_projection.text_graph_of("doc-a") == newer
        text_graph_projection.replace_text_graph(TextGraphDocument("doc-a", (), (), frozenset()))
        assert text_graph_projection.text_graph_of("doc-a") == TextGraphDocument("doc-a", (), (), frozenset())
        assert text_graph_projection.text_graph_documents() == ["doc-b"]
        assert text_graph_projection.text_graph_of("doc-b") == other  # positive control: untouched
