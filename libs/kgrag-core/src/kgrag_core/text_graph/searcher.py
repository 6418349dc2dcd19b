"""Text-graph search: hybrid first, then a personalized PageRank walk and query-time bridges, fused by RRF.

The question's own names and phrases, and the nodes of hybrid's best passages, seed a walk over the
caller-visible text graph (edges from readable chunks only, loaded with the ACL filter in SQL). The names
the first-hop passages add to the question's become second-hop BM25 queries (bridging: "the director of
the film that won X" finds the film, then the director's page by the film's name). Both join dense and
BM25 as weighted routes below hybrid's head. Lookups stay hybrid; any failure or overrun answers hybrid's
ranking with `degraded` and the reason in `limits["text_graph"]`.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from typing import Protocol

from kgrag_core.acl import Caller
from kgrag_core.filters import SearchFilters
from kgrag_core.graph_retrieval.router import QuestionRouter, RuleRouter
from kgrag_core.graph_retrieval.searcher import HybridBackend
from kgrag_core.limits import TOP_K
from kgrag_core.ports import KeywordIndex
from kgrag_core.retrieval.fusion import (
    FusedCandidate,
    describe_failure,
    fused_hits,
    head_first,
    reciprocal_rank_fusion,
)
from kgrag_core.retrieval.hybrid import HybridCandidates, SearchMode
from kgrag_core.retrieval.query_vectors import one_embedding_per_search
from kgrag_core.search import RouteHit, SearchHit, SearchResponse
from kgrag_core.text_graph.builder import word_ngrams
from kgrag_core.text_graph.hops import bridge_shaped, chain_length, hop_query, paired_bridge, place_bridged
from kgrag_core.text_graph.model import TextGraphSettings, WalkEdge
from kgrag_core.text_graph.pagerank import personalized_pagerank, specificity
from kgrag_core.text_graph.patterns import name_phrases
from kgrag_core.text_graph.phrases import NAME_KINDS
from kgrag_core.text_graph.ports import Neighbourhood, TextGraphStore
from kgrag_core.tracing.timing import stage

log = logging.getLogger(__name__)

TEXT_GRAPH_MODE = "hybrid+text_graph"


class TextGraphBackend(HybridBackend, Protocol):
    """What the text graph needs of hybrid search (`HybridSearcher`): graph-assisted search's needs, its
    candidates before hydration, and its keyword index (the second hops' BM25 queries need no hydration)."""

    @property
    def keywords(self) -> KeywordIndex: ...

    def candidates(
        self,
        query: str,
        caller: Caller,
        *,
        top_k: int | None = None,
        candidates: int | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        filters: SearchFilters | None = None,
    ) -> HybridCandidates: ...


@dataclass(frozen=True, slots=True)
class _Walk:
    ranked: list[RouteHit]
    bridged: list[RouteHit]
    best_bridged: list[str]  # each bridge's best second-hop passage (not a first-hop one), best bridge first
    bridges: list[str]
    seeds: int
    edges: int
    truncated: bool
    hops: int = 0  # further hops taken (third passage and on)
    loaded: Mapping[str, SearchHit] | None = None  # passages the further hops already hydrated


class TextGraphSearcher:
    def __init__(
        self,
        hybrid: TextGraphBackend,
        store: TextGraphStore,
        *,
        settings: TextGraphSettings | None = None,
        router: QuestionRouter | None = None,
        clock: Callable[[], float] = time.monotonic,
        executor: Executor | None = None,
    ) -> None:
        self.hybrid = hybrid
        self.store = store
        self.settings = settings or TextGraphSettings()
        self.router: QuestionRouter = router or RuleRouter()
        self.clock = clock
        # The neighbourhood statement runs while hybrid's first passages are hydrated (both wait on the
        # database; neither needs the other's answer) on the runtime's executor, which the app shuts down
        # (the core owns no threads); without one the walk reads it after hydration, in the caller's thread.
        self.executor = executor

    def search(
        self,
        query: str,
        caller: Caller,
        top_k: int | None = None,
        *,
        filters: SearchFilters | None = None,
        routed: bool = True,
    ) -> SearchResponse:
        """Walks for the question kinds of `settings.kinds` (the router's); `routed=False` walks for any
        (evaluation). The response's `limits["text_graph"]` says
        whether the walk was used, why not, and whether it degraded."""
        # The router and hybrid's dense route embed the same question: once (kgrag_core.retrieval.query_vectors).
        with one_embedding_per_search():
            return self._search(query, caller, top_k, filters=filters, routed=routed)

    def _search(
        self,
        query: str,
        caller: Caller,
        top_k: int | None,
        *,
        filters: SearchFilters | None,
        routed: bool,
    ) -> SearchResponse:
        k = TOP_K.resolve(top_k)
        route = self.router.route(query)
        cfg = self.settings
        walks = any(kind.value in cfg.kinds for kind in route.strategies)
        if cfg.route_bridges and self._bridge_shaped(query):
            walks = True
        if routed and not walks:
            plain = self.hybrid.search(query, caller, top_k=k, filters=filters)
            return _plain(plain, k, reason=route.kind.value, degraded=False)
        found = self.hybrid.candidates(query, caller, top_k=min(TOP_K.maximum, max(k, cfg.pool)), filters=filters)
        # Hybrid's first `pool` candidates are its side of the fusion (ids and ranks); only those the walk reads
        # (the first hop's text) or a degraded answer returns are hydrated now, the rest when they place.
        pool = found.fused[: found.top_k]
        first = max(k, cfg.seed_passages, cfg.bridge_passages, cfg.keep_head)
        early = self._start_neighbourhood(found.query, [c.chunk_id for c in found.fused], found.allowed)
        hydrated = self.hybrid.hydrate(found.fused, set(found.allowed), first, filters=filters)
        hits0 = tuple(replace(h, score=c.score, ranks=dict(c.ranks)) for c, h in hydrated)
        base = SearchResponse(query=found.query, hits=hits0, mode=SearchMode.HYBRID.value, limits=dict(found.limits))
        started = self.clock()
        with stage("text_graph"):
            try:
                allowed = found.allowed
                if not allowed:
                    return _plain(base, k, reason="nothing readable", degraded=False)
                walk = self._walk(base, caller, allowed, filters, early)
                hits, limits = self._fuse(base, pool, walk, set(allowed), k, filters)
            except Exception as err:
                # Not swallowed: the response says degraded with the reason, and operators get the traceback.
                log.warning("text graph failed, answering from hybrid search: %s", err, exc_info=True)
                return _plain(base, k, reason=describe_failure(err), degraded=True)
            elapsed = self.clock() - started
        if elapsed > cfg.timeout_s:
            reason = f"timeout: text graph took {elapsed * 1000:.0f} ms (limit {cfg.timeout_s * 1000:.0f} ms)"
            return _plain(base, k, reason=reason, degraded=True)
        limits["text_graph"] = {
            "used": True,
            "degraded": False,
            "reason": None,
            "walk_ms": round(elapsed * 1000, 1),
            "seeds": walk.seeds,
            "edges": walk.edges,
            "truncated": walk.truncated,
            "bridges": len(walk.bridges),
            "further_hops": walk.hops,
        }
        return SearchResponse(query=base.query, hits=hits, mode=TEXT_GRAPH_MODE, limits=limits)

    def _bridge_shaped(self, query: str) -> bool:
        """Bridge-shaped, or (with `pair_bridges`) a comparison through the entities related to two named ones."""
        return bridge_shaped(query) or (self.settings.pair_bridges and paired_bridge(query))

    # --- the walk --------------------------------------------------------------------------------------

    def _seeds(self, query: str, ranked: Sequence[str]) -> tuple[list[str], list[str]]:
        """The walk's seed nodes (the question's word runs that are nodes: the builder's came from NER and noun
        chunks, and a lookup by normal form finds them) and seed passages (hybrid's best)."""
        cfg = self.settings
        keys = self.store.node_keys(sorted(word_ngrams(query, cfg.max_phrase_words)))
        return sorted(set(keys.values())), list(ranked[: cfg.seed_passages])

    def _neighbourhood(
        self, node_keys: Sequence[str], chunk_ids: Sequence[str], allowed: Sequence[str]
    ) -> Neighbourhood:
        cfg = self.settings
        return self.store.neighbourhood(
            node_keys,
            chunk_ids,
            allowed,
            max_share=cfg.max_passage_share,
            min_cap=cfg.min_passage_cap,
            max_edges=cfg.max_edges,
        )

    def _start_neighbourhood(
        self, query: str, ranked: Sequence[str], allowed: Sequence[str]
    ) -> tuple[list[str], Future[Neighbourhood]] | None:
        """The neighbourhood of hybrid's best candidates before they are hydrated; the walk uses it only if
        hydration kept the same first passages (it drops one the store no longer lets the caller read). A
        failure surfaces when the walk asks for the result (and degrades the search like any other)."""
        if not allowed or self.executor is None:
            return None
        chunks = list(ranked[: self.settings.seed_passages])

        def run() -> Neighbourhood:
            nodes, _ = self._seeds(query, chunks)
            return self._neighbourhood(nodes, chunks, allowed)

        context = contextvars.copy_context()  # the caller's stage timings
        return chunks, self.executor.submit(context.run, run)

    def _walk(
        self,
        base: SearchResponse,
        caller: Caller,
        allowed: Sequence[str],
        filters: SearchFilters | None,
        early: tuple[list[str], Future[Neighbourhood]] | None = None,
    ) -> _Walk:
        cfg = self.settings
        # Model-free linking: the question's nodes and the names of the first-hop passages.
        question = word_ngrams(base.query, cfg.max_phrase_words)
        first_hop = base.hits[: cfg.bridge_passages]
        hop_grams = set().union(*(name_phrases(h.text, cfg.max_phrase_words) for h in first_hop))
        keys = self.store.node_keys(sorted(question | hop_grams))
        question_keys = {keys[p] for p in question}
        node_keys, seed_chunks = self._seeds(base.query, [h.chunk_id for h in base.hits])
        if early is not None and early[0] == seed_chunks:
            hood = early[1].result()
        else:
            hood = self._neighbourhood(node_keys, seed_chunks, allowed)
        df = {edge.node_key: edge.df for edge in hood.edges}
        seeds: dict[str, float] = {}
        for key in question_keys:
            if key in df:
                seeds[key] = specificity(df[key], hood.passages)
        for rank, chunk_id in enumerate(seed_chunks, start=1):
            seeds[chunk_id] = seeds.get(chunk_id, 0.0) + cfg.seed_passage_weight / rank
        scores = personalized_pagerank(
            hood.edges,
            seeds,
            damping=cfg.damping,
            iterations=cfg.iterations,
            tolerance=cfg.tolerance,
            corpus=hood.passages,
        )
        ranked = [RouteHit(c, s, i) for i, (c, s) in enumerate(list(scores.items())[: cfg.walk_candidates], start=1)]
        by_rank = {h.chunk_id: i for i, h in enumerate(first_hop)} if cfg.bridge_order == "rank" else None
        bridges = bridge_names(
            hood.edges, {h.chunk_id for h in first_hop}, keys, question_keys, hood.passages, ranks=by_rank
        )
        used = bridges[: cfg.max_bridges]
        lists = self._second_hops(used, base.query, caller, allowed, filters)
        first = {h.chunk_id for h in first_hop}
        best = [(hits[0].score, i, hits[0].chunk_id) for i, hits in enumerate(_without(lists, first)) if hits]
        # By score, or in the bridges' own order when that order is the first hop's ranking.
        order = (lambda b: b[1]) if by_rank is not None else (lambda b: (-b[0], b[1]))
        best = sorted(best, key=order)
        best_bridged = [chunk_id for _, _, chunk_id in best]
        bridged = _interleave(lists, cfg.bridge_candidates)
        chain: list[str] = []
        loaded: dict[str, SearchHit] = {}
        further = min(cfg.max_hops, chain_length(base.query)) - 2 if bridge_shaped(base.query) else 0
        if cfg.chain_max_df and min((df[k] for k in question_keys if k in df), default=0) > cfg.chain_max_df:
            further = 0  # no name of the question pins its first passage down: a chain would start on a guess
        if further > 0 and best_bridged:
            seen = question | hop_grams | set(used)
            taken = first | set(best_bridged) | {h.chunk_id for h in base.hits[: cfg.keep_head]}
            start = best_bridged[0]
            if cfg.chain_from == "top":
                # The chain goes on from a bridge the first hop's best passage names (the likeliest first link;
                # a distractor's bridge can score higher on the hop query and lead nowhere).
                top_names = name_phrases(first_hop[0].text, cfg.max_phrase_words)
                start = next((chunk_id for _, i, chunk_id in best if used[i] in top_names), start)
                best_bridged = [start] + [c for c in best_bridged if c != start]  # it leads its chain's slots
            chain = self._further_hops(start, further, base.query, seen, taken, allowed, filters, loaded)
            # The chain's passages join the bridge route (so the fusion knows them) and follow their bridge's.
            listed = {h.chunk_id for h in bridged}
            bridged += [RouteHit(c, 0.0, len(bridged) + i) for i, c in enumerate(chain, 1) if c not in listed]
            cut = cfg.chain_first or len(best_bridged)
            best_bridged = best_bridged[:cut] + chain + best_bridged[cut:]
        return _Walk(
            ranked,
            bridged,
            best_bridged,
            used,
            len(seeds),
            len(hood.edges),
            hood.truncated,
            hops=len(chain),
            loaded=loaded,
        )

    def _further_hops(
        self,
        start: str,
        hops: int,
        question: str,
        seen: set[str],
        taken: set[str],
        allowed: Sequence[str],
        filters: SearchFilters | None,
        loaded: dict[str, SearchHit],
    ) -> list[str]:
        """Up to `hops` passages after `start` (the best second-hop passage), each the best BM25 answer to a
        hop query on a name the previous one adds (not one the question, the first hop or the chain already
        named); the highest-scoring name's passage is the next hop. Bounded by `hop_names` queries a hop and
        `hop_budget_s` in all; a passage the caller cannot read ends the chain (hydration rechecks the ACL)."""
        cfg = self.settings
        index = self.hybrid.keywords
        readable = set(allowed)
        deadline = self.clock() + cfg.hop_budget_s
        chain: list[str] = []
        current = start
        for _ in range(hops):
            got = self.hybrid.hydrate([FusedCandidate(current, 0.0)], readable, 1, filters=filters)
            if not got:
                break
            hit = got[0][1]
            loaded[hit.chunk_id] = hit
            named = name_phrases(hit.text, cfg.max_phrase_words)
            fresh = {p for p in named - seen if not any(p != o and f" {p} " in f" {o} " for o in named - seen)}
            seen |= named
            best: RouteHit | None = None
            # Longer names first: "quillon institute" says more than "kochi" when only a few are asked.
            for name in sorted(fresh, key=lambda p: (-len(p.split()), p))[: cfg.hop_names]:
                if self.clock() > deadline:
                    break
                found = index.search(hop_query(name, question), allowed, 3, filters=filters)
                top = next((h for h in found if h.chunk_id not in taken), None)
                if top is not None and (best is None or top.score > best.score):
                    best = top
            if best is None:
                break
            chain.append(best.chunk_id)
            taken.add(best.chunk_id)
            current = best.chunk_id
        return chain

    def _second_hops(
        self,
        bridges: Sequence[str],
        question: str,
        caller: Caller,
        allowed: Sequence[str],
        filters: SearchFilters | None,
    ) -> list[list[RouteHit]]:
        """One BM25 query per bridge name (with what a bridge-shaped question asks, `bridge_context`); each
        hit scored as hybrid's fusion scores a single route, 1 / (rrf_k + rank)."""
        cfg = self.settings
        # The ask describes the second-hop passage only when it asks for an attribute of the related entity.
        ask = cfg.bridge_context and self._bridge_shaped(question)
        queries = [hop_query(b, question) if ask else b for b in bridges]
        mode = SearchMode(cfg.bridge_mode)
        if mode is SearchMode.BM25:
            # Ids and ranks are all a second hop needs: the keyword index (ACL and filters inside it) answers
            # without hydrating ten passages per bridge; what the fusion keeps is hydrated and rechecked there.
            index = self.hybrid.keywords
            lists = [index.search(q, allowed, cfg.bridge_candidates, filters=filters) for q in queries]
            return [[RouteHit(h.chunk_id, 1.0 / (self.hybrid.rrf_k + h.rank), h.rank) for h in hits] for hits in lists]
        return [
            [
                RouteHit(h.chunk_id, h.score, rank)
                for rank, h in enumerate(
                    self.hybrid.search(q, caller, top_k=cfg.bridge_candidates, mode=mode, filters=filters).hits,
                    start=1,
                )
            ]
            for q in queries
        ]

    def _fuse(
        self,
        base: SearchResponse,
        pool: Sequence[FusedCandidate],
        walk: _Walk,
        allowed: set[str],
        k: int,
        filters: SearchFilters | None,
    ) -> tuple[tuple[SearchHit, ...], dict[str, object]]:
        cfg = self.settings
        routes: dict[str, list[RouteHit]] = {}
        for name in ("dense", "bm25"):
            ranked = sorted((c.ranks[name], c.chunk_id) for c in pool if name in c.ranks)
            routes[name] = [RouteHit(chunk_id, 0.0, rank) for rank, chunk_id in ranked]
        routes["text_graph"] = walk.ranked
        routes["bridge"] = walk.bridged
        weights = {"dense": 1.0, "bm25": 1.0, "text_graph": cfg.walk_weight, "bridge": cfg.bridge_weight}
        fused = reciprocal_rank_fusion(routes, k=self.hybrid.rrf_k, weights=weights)
        hybrid_ids = {c.chunk_id for c in pool}
        unseen = [c for c in fused if c.chunk_id not in hybrid_ids][: max(k, cfg.walk_candidates)]
        picked = {c.chunk_id for c in unseen}
        unseen += [c for c in fused if c.chunk_id in set(walk.best_bridged) - picked - hybrid_ids]
        eligible = hybrid_ids | {c.chunk_id for c in unseen}
        by_id = {c.chunk_id: c for c in fused}
        known = {h.chunk_id: h for h in base.hits} | dict(walk.loaded or {})
        tried = set(known)

        def load(chunk_ids: Sequence[str]) -> None:
            # Every chunk shown passes the hybrid searcher's own hydration and ACL recheck.
            todo = [by_id[c] for c in chunk_ids if c not in tried]
            tried.update(c.chunk_id for c in todo)
            for _, loaded in self.hybrid.hydrate(todo, allowed, len(todo), filters=filters) if todo else []:
                known[loaded.chunk_id] = loaded

        head = [h.chunk_id for h in base.hits[: cfg.keep_head]]
        ordered_ids = [c.chunk_id for c in head_first(fused, head) if c.chunk_id in eligible]
        # In a bridge-shaped question the second hop's answer is ranked by nothing that saw the question's
        # entity, so it gets its own slots; elsewhere the bridges only join the fusion.
        slots = cfg.bridge_slots + min(cfg.chain_slots, walk.hops) if self._bridge_shaped(base.query) else 0
        load(walk.best_bridged)
        # The first k places take at most k + slots ranked passages: the ones after them are never loaded.
        ranked_ids: list[str] = []
        step = max(k + slots, 20)
        for start in range(0, len(ordered_ids), step):
            window = ordered_ids[start : start + step]
            load(window)
            ranked_ids += [c for c in window if c in known]
            if len(ranked_ids) >= k + slots:
                break
        readable = [c for c in walk.best_bridged if c in known]
        placed = place_bridged(ranked_ids, readable, top=min(cfg.bridge_top, k), slots=slots, keep=cfg.keep_head)
        ordered = [by_id[c] for c in placed]
        return fused_hits(
            ordered, known, k, base_limits=base.limits, routes=routes, weights=weights, fused_count=len(fused)
        )


def bridge_names(
    edges: Sequence[WalkEdge],
    first_hop: set[str],
    phrases: Mapping[str, str],
    question_keys: set[str],
    passages: int,
    ranks: Mapping[str, int] | None = None,
) -> list[str]:
    """Names (entity, title or link nodes) the first-hop passages name and the question does not, most
    specific first; `phrases` maps the phrases seen in those passages to their node keys (nodes hold no
    text, so a name is read back from the passage the caller already holds). With `ranks` (first-hop chunk
    -> rank), the names of a better-ranked passage come first: the first hop's best passage is the likeliest
    to be the chain's, and a rarer name in a distractor below it would otherwise lead the hops."""
    text_of = {key: phrase for phrase, key in phrases.items()}
    scored: dict[str, float] = {}
    named_by: dict[str, set[str]] = {}
    for edge in edges:
        if edge.chunk_id not in first_hop or edge.kind not in NAME_KINDS or edge.node_key in question_keys:
            continue
        phrase = text_of.get(edge.node_key)
        if phrase is not None:
            scored[phrase] = max(scored.get(phrase, 0.0), specificity(edge.df, passages))
            named_by.setdefault(phrase, set()).add(edge.chunk_id)
    # A name inside a longer bridge adds nothing ("england" under "bank of england").
    kept = {p: s for p, s in scored.items() if not any(p != o and f" {p} " in f" {o} " for o in scored)}
    by_specificity = [p for p, _ in sorted(kept.items(), key=lambda item: (-item[1], item[0]))]
    if ranks is None:
        return by_specificity
    # Round robin over the first-hop passages in rank order, each passage's rarest unused name in turn (a
    # comparison's two first-hop passages each give their bridge before either gives a second).
    lists = [
        [p for p in by_specificity if c in named_by[p]]
        for c in sorted(first_hop, key=lambda c: ranks.get(c, len(ranks)))
    ]
    out: dict[str, None] = {}
    for depth in range(max(map(len, lists), default=0)):
        out.update((names[depth], None) for names in lists if depth < len(names))
    return list(out)


def _plain(response: SearchResponse, k: int, *, reason: str, degraded: bool) -> SearchResponse:
    limits = dict(response.limits)
    limits["top_k"] = k
    limits["text_graph"] = {"used": False, "degraded": degraded, "reason": reason}
    return replace(response, hits=response.hits[:k], limits=limits)


def _without(lists: Sequence[Sequence[RouteHit]], chunk_ids: set[str]) -> list[list[RouteHit]]:
    return [[h for h in hits if h.chunk_id not in chunk_ids] for hits in lists]


def _interleave(lists: Sequence[Sequence[RouteHit]], n: int) -> list[RouteHit]:
    """Interleaved so every second hop places its best passage first."""
    bridged: list[RouteHit] = []
    seen: set[str] = set()
    for depth in range(n):
        for hits in lists:
            if depth < len(hits) and hits[depth].chunk_id not in seen:
                seen.add(hits[depth].chunk_id)
                bridged.append(RouteHit(hits[depth].chunk_id, hits[depth].score, len(bridged) + 1))
    return bridged
