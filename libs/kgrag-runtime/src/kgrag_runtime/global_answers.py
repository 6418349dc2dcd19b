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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.answering.fallback import FALLBACK_REASONS
from kgrag_core.answering.model import Answer
from kgrag_core.communities.global_route import GlobalResult, GlobalSettings, global_themes, lexical_relevance
from kgrag_core.communities.model import Community
from kgrag_core.communities.ports import CommunityStore, level_size
from kgrag_core.communities.summary import SummaryCache, summarised_view
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
_CACHED_CHUNKS = 4096  # chunks the views quote, per scope and generation
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
    # The views' quoted chunks come from the ask's own hybrid hits and from chunks this scope read earlier
    # in the same generation (rechecked then, unchanged since); False: every view hydrates its chunks anew
    # (the benchmark's same-run baseline).
    reuse: bool = True
    _chunks: OrderedDict[tuple[object, ...], SearchHit] = field(default_factory=OrderedDict)

    def available(self) -> bool:
        return level_size(self.communities, self.level) > 0

    def themes(self, question: str, caller: Caller, hits: Sequence[SearchHit]) -> GlobalResult:
        allowed = readable_classes(self.hybrid.acls.acl_classes(), caller)
        if not allowed:
            return GlobalResult(question, (), (), (), 0)
        candidates = self.candidates(question, allowed, hits)
        load = self._loader(set(allowed), hits)
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

        if not self.summarising:
            return global_themes(question, candidates, view_of, self.relevance, self.settings, prior=prior)
        by_id = {c.community_id: c for c in pool}
        counts: dict[str, int] = {}

        def summarise(view: CommunityView) -> CommunityView:
            # Only the communities chosen for mapping: one cached model call each per scope and view.
            written = self._summary(by_id[view.community_id], view, load, allowed)
            reason = written.fallback or "abstractive"
            counts[reason] = counts.get(reason, 0) + 1
            return summarised_view(view, written)

        result = global_themes(
            question, candidates, view_of, self.relevance, self.settings, prior=prior, summarise=summarise
        )
        failed = next((r for r in counts if r in FALLBACK_REASONS), None)
        return replace(result, summaries=counts, fallback=failed)

    @property
    def summarising(self) -> bool:
        """Whether summaries are the model's (a chat model, and a generation to key the cache by)."""
        return self.chat is not None and self.generation is not None

    def _summary(
        self,
        community: Community,
        view: CommunityView,
        load: Callable[[Sequence[str]], Mapping[str, SearchHit]],
        allowed: Sequence[str] | None,
    ) -> Answer:
        assert self.chat is not None and self.generation is not None  # `summarising`
        return self.summaries.summary(community, view, load, self.chat, allowed, self.generation())

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
        if self.summarising:
            written = self._summary(community, view, load, allowed)
            out["summary"] = [{"text": s.text, "citations": list(s.citation_ids)} for s in written.sentences]
            out["citations"] = [c.as_dict() for c in written.citations]
            out["doc_ids"] = list(dict.fromkeys(c.doc_id for c in written.citations))
            out["mode"] = written.mode.value
            if written.fallback is not None:
                out["fallback"] = {"reason": written.fallback}
        return out

    def _loader(
        self, readable: set[str] | None, hits: Sequence[SearchHit] = ()
    ) -> Callable[[Sequence[str]], Mapping[str, SearchHit]]:
        """The caller's chunk loader (the ACL recheck of `hydrate`). With `reuse`, chunks this scope loaded
        in this generation (which every index or ACL change bumps), and the caller's own `hits` (hydrated by
        this ask's search through the same classes), are not read again."""
        scope = ("*",) if readable is None else tuple(sorted(readable))
        own = {h.chunk_id: replace(h, score=0.0, ranks={}) for h in hits} if readable is not None else {}

        def hydrate(chunk_ids: Sequence[str]) -> dict[str, SearchHit]:
            classes = readable
            if classes is None:  # an administrator reads every class
                classes = {c.acl_class_id for c in self.hybrid.acls.acl_classes()}
            found = self.hybrid.hydrate([FusedCandidate(c, 0.0) for c in chunk_ids], classes, len(chunk_ids))
            return {h.chunk_id: h for _, h in found}

        # Taken once per loader (one ask): what it reads under it is kept under it, so a change meanwhile
        # only makes those entries unreachable.
        generation = self.generation() if self.reuse and self.generation is not None else None

        def load(chunk_ids: Sequence[str]) -> Mapping[str, SearchHit]:
            if not chunk_ids:
                return {}
            if generation is None:
                return hydrate(chunk_ids)
            out: dict[str, SearchHit] = {}
            for chunk_id in chunk_ids:
                key = (generation, scope, chunk_id)
                kept = self._chunks.get(key)
                if kept is not None:
                    self._chunks.move_to_end(key)
                kept = kept or own.get(chunk_id)
                if kept is not None:
                    out[chunk_id] = kept
            missing = [c for c in chunk_ids if c not in out]
            fresh = hydrate(missing) if missing else {}
            out.update(fresh)
            # The ask's own hits are used for this ask only.
            for chunk_id, hit in fresh.items():
                self._chunks[(generation, scope, chunk_id)] = hit
            while len(self._chunks) > _CACHED_CHUNKS:
                self._chunks.popitem(last=False)
            return out

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
    chat: ChatModel | None = None,
) -> GlobalAnswerer:
    """The GLOBAL route over the communities stored in PostgreSQL (migration 0027); with `chat`, the
    communities' summaries (`GET /v1/communities/{id}`, GLOBAL themes) are the model's, verified and cached."""
    from kgrag_adapters.postgres.communities import PostgresCommunityStore

    store = PostgresCommunityStore(pool)
    return GlobalAnswerer(store, graph, hybrid, generation=generation, on_router=on_router, chat=chat)


def summary_preview(settings: KgragSettings) -> Callable[[RebuildPlan], dict[str, object]]:
    """`kgrag communities rebuild --dry-run`'s summary cost: one abstractive summary per community to
    rebuild and per access scope that queries it, priced like re-extraction (KGRAG_LLM_PRICE_*)."""
    from kgrag_core.communities.summary import summary_cost_preview
    from kgrag_runtime.extraction import cost_model, prompt_token_counter

    cost, count = cost_model(settings), prompt_token_counter(settings)

    def preview(plan: RebuildPlan) -> dict[str, object]:
        return summary_cost_preview(plan.communities, cost, llm=settings.llm_configured, count_tokens=count)

    return preview
