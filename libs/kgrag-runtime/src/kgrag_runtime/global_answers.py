"""The GLOBAL route wired to one process's adapters: which communities a question reads, as the caller sees
them, and how their text is matched to the question (the embedding model, plus the question's terms).

Candidates never depend on what the caller cannot see: when the level holds few enough communities, all of
them in id order (ids are name-free hashes); otherwise the communities of the entities linked from the
question and from the caller's own best passages (both read through the caller's visibility), in id order.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.communities.global_route import GlobalResult, GlobalSettings, global_themes, lexical_relevance
from kgrag_core.communities.model import Community
from kgrag_core.communities.ports import CommunityStore, level_size
from kgrag_core.communities.summary import SummaryCache
from kgrag_core.communities.view import (
    CommunityReads,
    CommunityView,
    ViewSettings,
    read_visible,
    read_visible_many,
    view_of_visible,
)
from kgrag_core.graph.ports import GraphReader
from kgrag_core.graph_retrieval.linking import link_entities, linked_entity_ids, seed_entities
from kgrag_core.ports import ChatModel
from kgrag_core.retrieval.fusion import FusedCandidate
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.search import SearchHit

if TYPE_CHECKING:
    from kgrag_adapters.postgres.pool import ConnectionPool
    from kgrag_core.communities.model import RebuildPlan
    from kgrag_runtime.settings import KgragSettings

_PASSAGES_LINKED = 5  # the caller's best passages whose entities seed the candidates on a large level
_CACHED_READS = 1024  # visible reads and text vectors kept per process
_READ_BATCH = 8  # candidate communities read together by the GLOBAL route
_EMBEDDED_CHARS = 300  # a view's title and member names come first in its text


@dataclass(slots=True)
class GlobalAnswerer:
    communities: CommunityStore
    graph: GraphReader
    hybrid: HybridSearcher
    settings: GlobalSettings = field(default_factory=GlobalSettings)
    view_settings: ViewSettings = field(default_factory=ViewSettings)
    level: int = 0  # 0 = the broadest communities
    # The corpus-and-ACL generation (the answer cache's: bumped by every index or ACL change): what a cached
    # visible read is valid for. None: nothing is cached.
    generation: Callable[[], int] | None = None
    _visible: OrderedDict[tuple[object, ...], CommunityReads | None] = field(default_factory=OrderedDict)
    _vectors: OrderedDict[str, tuple[float, ...]] = field(default_factory=OrderedDict)
    # Whether AUTO asks the router routes as global take this route too (mode GLOBAL always does); the
    # themes are fused with the hybrid answer, so following the router never cites less (KGRAG_GLOBAL_ON_ROUTER).
    on_router: bool = True
    # With a chat model (and a generation to key entries by), `summary_of` gives the model's summary of the
    # caller's view, verified like an answer and served from `summaries` (one model call per community,
    # scope, model, prompt version and view; dropped with the generation). None: the extractive summary.
    chat: ChatModel | None = None
    summaries: SummaryCache = field(default_factory=SummaryCache)

    def available(self) -> bool:
        return level_size(self.communities, self.level) > 0

    def themes(self, question: str, caller: Caller, hits: Sequence[SearchHit]) -> GlobalResult:
        allowed = readable_classes(self.hybrid.acls.acl_classes(), caller)
        if not allowed:
            return GlobalResult(question, (), (), (), 0)
        candidates = self.candidates(question, allowed, hits)
        load = self._loader(set(allowed))
        # The candidates are read a batch at a time (three batched graph reads per batch), when the route
        # reaches the batch's first one: the time budget, checked before each community, then bounds the
        # reading too (at most one batch past it), not only the quoting.
        pool = candidates[: self.settings.max_communities]
        position = {c.community_id: i for i, c in enumerate(pool)}
        read: dict[str, CommunityReads | None] = {}

        def view_of(community: Community) -> CommunityView | None:
            if community.community_id not in read:
                at = position[community.community_id]
                read.update(self._read_many(pool[at : at + _READ_BATCH], allowed))
            seen = read.get(community.community_id)
            return None if seen is None else view_of_visible(community, seen, load, self.view_settings, focus=question)

        found = {h.doc_id for h in hits}

        def prior(view: CommunityView) -> float:
            # The caller's own hybrid search: a community whose sentences come from documents it returned.
            docs = view.doc_ids
            return len(found.intersection(docs)) / len(docs) if docs else 0.0

        return global_themes(question, candidates, view_of, self.relevance, self.settings, prior=prior)

    def summary_of(self, community: Community, caller: Caller) -> dict[str, object] | None:
        """The caller's extractive summary of one community (its key sentences, cited), or None when nothing
        the caller may read is quotable. Built from the caller's view only, like the GLOBAL route's."""
        allowed = None if caller.admin else readable_classes(self.hybrid.acls.acl_classes(), caller)
        if allowed is not None and not allowed:
            return None
        readable = None if allowed is None else set(allowed)
        seen = self._read_visible(community, allowed)
        load = self._loader(readable)
        view = None if seen is None else view_of_visible(community, seen, load, self.view_settings)
        if view is None:
            return None
        body = view.as_dict()
        out = {k: body[k] for k in ("title", "summary", "citations", "doc_ids", "stale", "built_at")}
        if self.chat is not None and self.generation is not None:
            written = self.summaries.summary(community, view, load, self.chat, allowed, self.generation())
            out["summary"] = [{"text": s.text, "citations": list(s.citation_ids)} for s in written.sentences]
            out["citations"] = [c.as_dict() for c in written.citations]
            out["doc_ids"] = list(dict.fromkeys(c.doc_id for c in written.citations))
            out["mode"] = written.mode.value
            if written.fallback is not None:
                out["fallback"] = {"reason": written.fallback}
        return out

    def _loader(self, readable: set[str] | None) -> Callable[[Sequence[str]], Mapping[str, SearchHit]]:
        def load(chunk_ids: Sequence[str]) -> Mapping[str, SearchHit]:
            if not chunk_ids:
                return {}
            if readable is None:  # an administrator reads every class
                every = {c.acl_class_id for c in self.hybrid.acls.acl_classes()}
                found = self.hybrid.hydrate([FusedCandidate(c, 0.0) for c in chunk_ids], every, len(chunk_ids))
            else:
                found = self.hybrid.hydrate([FusedCandidate(c, 0.0) for c in chunk_ids], readable, len(chunk_ids))
            return {h.chunk_id: h for _, h in found}

        return load

    def candidates(self, question: str, allowed: Sequence[str], hits: Sequence[SearchHit]) -> list[Community]:
        if level_size(self.communities, self.level) <= self.settings.max_communities:
            return sorted(self.communities.communities(self.level), key=lambda c: c.community_id)
        texts = [question, *(h.text for h in hits[:_PASSAGES_LINKED])]
        if self.view_settings.light:
            linked = linked_entity_ids(texts, self.graph, allowed)
        else:  # the same ids, each linked entity named and counted (the benchmark's same-run baseline)
            links = [seed_entities(link_entities(t, self.graph, allowed)) for t in texts]
            linked = {s.entity.entity_id for found in links for s, _ in found}
        chosen = self.communities.communities_of(sorted(linked), self.level) if linked else []
        return sorted(chosen, key=lambda c: c.community_id)

    def _read_visible(self, community: Community, allowed: Sequence[str] | None) -> CommunityReads | None:
        """What these classes see of the community, reused while the corpus, the ACLs and the community's
        content are unchanged: the key holds the exact classes, so no scope ever reads another's."""
        if self.generation is None:
            return read_visible(community, self.graph, allowed, self.view_settings)
        scope = ("*",) if allowed is None else tuple(allowed)  # None: an administrator
        key = (community.community_id, community.content_hash, scope, self.generation())
        if key in self._visible:
            self._visible.move_to_end(key)
            return self._visible[key]
        seen = read_visible(community, self.graph, allowed, self.view_settings)
        self._visible[key] = seen
        while len(self._visible) > _CACHED_READS:
            self._visible.popitem(last=False)
        return seen

    def _read_many(self, communities: Sequence[Community], allowed: Sequence[str]) -> dict[str, CommunityReads | None]:
        """`_read_visible` of each, the ones not cached read together (`read_visible_many`)."""
        if self.generation is None:
            return read_visible_many(communities, self.graph, allowed, self.view_settings)
        generation = self.generation()
        keys = {c.community_id: (c.community_id, c.content_hash, tuple(allowed), generation) for c in communities}
        out = {cid: self._visible[key] for cid, key in keys.items() if key in self._visible}
        for cid in out:
            self._visible.move_to_end(keys[cid])
        missing = [c for c in communities if c.community_id not in out]
        if missing:
            fresh = read_visible_many(missing, self.graph, allowed, self.view_settings)
            for cid, seen in fresh.items():
                self._visible[keys[cid]] = seen
            out.update(fresh)
            while len(self._visible) > _CACHED_READS:
                self._visible.popitem(last=False)
        return out

    def relevance(self, question: str, texts: Sequence[str]) -> list[float]:
        """Cosine of the question's and each text's opening (a view's title and member names) embedding,
        plus the share of the question's terms the whole text holds (the wording of its sentences)."""
        if not texts:
            return []
        q = self.hybrid.embedder.embed_query(question)
        vectors = self._embed([t[:_EMBEDDED_CHARS] for t in texts])
        lexical = lexical_relevance(question, texts)
        return [max(_cosine(q, v), 0.0) + lex for v, lex in zip(vectors, lexical, strict=True)]

    def _embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        missing = sorted({t for t in texts if t not in self._vectors})
        if missing:
            for text, vector in zip(missing, self.hybrid.embedder.embed_documents(missing), strict=True):
                self._vectors[text] = vector
            while len(self._vectors) > _CACHED_READS:
                self._vectors.popitem(last=False)
        return [self._vectors[t] for t in texts]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def build_global_answers(
    pool: ConnectionPool,
    graph: GraphReader,
    hybrid: HybridSearcher,
    generation: Callable[[], int] | None = None,
    *,
    on_router: bool = True,
) -> GlobalAnswerer:
    """The GLOBAL route over the communities stored in PostgreSQL (migration 0027)."""
    from kgrag_adapters.postgres.communities import PostgresCommunityStore

    return GlobalAnswerer(PostgresCommunityStore(pool), graph, hybrid, generation=generation, on_router=on_router)


def summary_preview(settings: KgragSettings) -> Callable[[RebuildPlan], dict[str, object]]:
    """`kgrag communities rebuild --dry-run`'s summary cost: one abstractive summary per community to
    rebuild and per access scope that queries it, priced like re-extraction (KGRAG_LLM_PRICE_*)."""
    from kgrag_core.communities.summary import summary_cost_preview
    from kgrag_runtime.extraction import cost_model

    cost = cost_model(settings)

    def preview(plan: RebuildPlan) -> dict[str, object]:
        return summary_cost_preview(plan.communities, cost, llm=settings.llm_configured)

    return preview
