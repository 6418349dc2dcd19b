"""The GLOBAL route wired to one process's adapters: which communities a question reads, as the caller sees
them, and how their text is matched to the question (the embedding model, plus the question's terms).

Candidates never depend on what the caller cannot see: when the level holds few enough communities, all of
them in id order (ids are name-free hashes); otherwise the communities of the entities linked from the
question and from the caller's own best passages (both read through the caller's visibility), in id order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.communities.global_route import GlobalResult, GlobalSettings, global_themes, lexical_relevance
from kgrag_core.communities.model import Community
from kgrag_core.communities.ports import CommunityStore
from kgrag_core.communities.view import CommunityView, ViewSettings, community_view
from kgrag_core.graph.ports import GraphReader
from kgrag_core.graph_retrieval.linking import link_entities, seed_entities
from kgrag_core.retrieval.fusion import FusedCandidate
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.search import SearchHit

if TYPE_CHECKING:
    from kgrag_adapters.postgres.pool import ConnectionPool

_PASSAGES_LINKED = 5  # the caller's best passages whose entities seed the candidates on a large level


@dataclass(slots=True)
class GlobalAnswerer:
    communities: CommunityStore
    graph: GraphReader
    hybrid: HybridSearcher
    settings: GlobalSettings = field(default_factory=GlobalSettings)
    view_settings: ViewSettings = field(default_factory=ViewSettings)
    level: int = 0  # 0 = the broadest communities
    # Whether AUTO asks the router routes as global take this route too (mode GLOBAL always does).
    on_router: bool = False

    def available(self) -> bool:
        return bool(self.communities.communities(self.level))

    def themes(self, question: str, caller: Caller, hits: Sequence[SearchHit]) -> GlobalResult:
        allowed = readable_classes(self.hybrid.acls.acl_classes(), caller)
        if not allowed:
            return GlobalResult(question, (), (), (), 0)
        candidates = self.candidates(question, allowed, hits)
        readable = set(allowed)

        def load(chunk_ids: Sequence[str]) -> Mapping[str, SearchHit]:
            if not chunk_ids:
                return {}
            found = self.hybrid.hydrate([FusedCandidate(c, 0.0) for c in chunk_ids], readable, len(chunk_ids))
            return {h.chunk_id: h for _, h in found}

        def view_of(community: Community) -> CommunityView | None:
            return community_view(community, self.graph, allowed, load, self.view_settings, focus=question)

        found = {h.doc_id for h in hits}

        def prior(view: CommunityView) -> float:
            # The caller's own hybrid search: a community whose sentences come from documents it returned.
            docs = view.doc_ids
            return len(found.intersection(docs)) / len(docs) if docs else 0.0

        return global_themes(question, candidates, view_of, self.relevance, self.settings, prior=prior)

    def candidates(self, question: str, allowed: Sequence[str], hits: Sequence[SearchHit]) -> list[Community]:
        level = self.communities.communities(self.level)
        if len(level) <= self.settings.max_communities:
            return sorted(level, key=lambda c: c.community_id)
        texts = [question, *(h.text for h in hits[:_PASSAGES_LINKED])]
        linked = {s.entity.entity_id for t in texts for s, _ in seed_entities(link_entities(t, self.graph, allowed))}
        chosen = self.communities.communities_of(sorted(linked), self.level) if linked else []
        return sorted(chosen, key=lambda c: c.community_id)

    def relevance(self, question: str, texts: Sequence[str]) -> list[float]:
        """Cosine of the question's and each text's embedding, plus the share of the question's terms it
        holds (names and wording the embedding blurs)."""
        if not texts:
            return []
        embedder = self.hybrid.embedder
        q = embedder.embed_query(question)
        vectors = embedder.embed_documents(list(texts))
        lexical = lexical_relevance(question, texts)
        return [max(_cosine(q, v), 0.0) + lex for v, lex in zip(vectors, lexical, strict=True)]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def build_global_answers(pool: ConnectionPool, graph: GraphReader, hybrid: HybridSearcher) -> GlobalAnswerer:
    """The GLOBAL route over the communities stored in PostgreSQL (migration 0027)."""
    from kgrag_adapters.postgres.communities import PostgresCommunityStore

    return GlobalAnswerer(PostgresCommunityStore(pool), graph, hybrid)
