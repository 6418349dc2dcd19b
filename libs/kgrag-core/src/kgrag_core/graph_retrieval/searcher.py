"""Graph-assisted search: hybrid search first, the graph as a routed layer on top, never a replacement.

Lookups go to plain hybrid search (seed 000: same score, several times faster). Other questions link
their entities, expand a bounded neighbourhood, and add the evidence chunks of what they found as a third
route, fused with dense and BM25 by weighted RRF. The graph route weighs less than one, so a chunk that
only the graph found can never outrank a direct top match (in seed 000 equal weights pushed gold
documents from ranks 1-3 to 12-17); on a multi-hop question hybrid's first hits are kept in place instead,
and the chain's evidence competes at full weight below them. Questions that name no entity, and multi-hop
ones, are also anchored on the entities named in hybrid's best passages. Graph chunks pass through the
hybrid searcher's own hydration and ACL recheck, exactly like its hits. Any failure or overrun in the graph
layer returns the hybrid answer with `degraded=True` and the reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.chunking.tokens import estimate_tokens
from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.filters import SearchFilters
from kgrag_core.graph.model import Edge, EntitySummary, Traversal, TraversalStep
from kgrag_core.graph.ports import GraphReader
from kgrag_core.graph_retrieval.evidence import ContextPack, GraphLine, gather_evidence, pack_context
from kgrag_core.graph_retrieval.expansion import ExpansionSettings, RelationRelevance, expand, relation_relevance
from kgrag_core.graph_retrieval.facts import fact_chunk_ids, named_in
from kgrag_core.graph_retrieval.filtered import FilteredGraphReader
from kgrag_core.graph_retrieval.linking import (
    EmbeddingSearch,
    LinkedMention,
    link_entities,
    passage_seeds,
    seed_entities,
)
from kgrag_core.graph_retrieval.paths import GraphPath, graph_paths
from kgrag_core.graph_retrieval.router import QuestionKind, QuestionRouter, Route, RuleRouter
from kgrag_core.limits import TOP_K
from kgrag_core.ports import AclStore, TokenCounter
from kgrag_core.retrieval.fusion import (
    FusedCandidate,
    describe_failure,
    fused_hits,
    head_first,
    reciprocal_rank_fusion,
)
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_core.search import RouteHit, SearchHit, SearchResponse
from kgrag_core.tracing.timing import stage

log = logging.getLogger(__name__)

GRAPH_MODE = "hybrid+graph"
DEFAULT_ROUTE_WEIGHTS: Mapping[str, float] = MappingProxyType({"dense": 1.0, "bm25": 1.0, "graph": 0.5})


class HybridBackend(Protocol):
    """What graph-assisted search needs of hybrid search; `HybridSearcher` provides all of it."""

    @property
    def acls(self) -> AclStore: ...

    @property
    def rrf_k(self) -> int: ...

    def search(
        self,
        query: str,
        caller: Caller,
        *,
        top_k: int | None = None,
        candidates: int | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        filters: SearchFilters | None = None,
    ) -> SearchResponse: ...

    # The hybrid searcher's hydration and ACL recheck, reused so graph chunks pass the same gate.
    def hydrate(
        self, fused: list[FusedCandidate], allowed: set[str], k: int, *, filters: SearchFilters | None = None
    ) -> list[tuple[FusedCandidate, SearchHit]]: ...


class EstimatedTokens:
    """The core's token estimate as a `TokenCounter`, for when no tokenizer is wired in."""

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)


@dataclass(frozen=True, slots=True)
class GraphSearchSettings:
    pool: int = 50  # hybrid hits hydrated as the dense/BM25 side of the fusion
    route_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_ROUTE_WEIGHTS))
    expansion: ExpansionSettings = field(default_factory=ExpansionSettings)
    graph_candidates: int = 30  # evidence chunks the graph route may offer
    claim_entities: int = 12  # entities whose claims are read: the seeds and the best reached
    max_link_candidates: int = 5
    budget_tokens: int = 8000
    # At most this share of the budget goes on graph lines: at 0.25 a well-connected entity's lines pushed
    # key-fact chunks out of the budget on the bundled eval; 0.1 still reads the ~3-4 lines holding answers.
    line_share: float = 0.1
    keep_head: int = 3  # on multi-hop questions, hybrid's first hits keep their places above the chain
    # A multi-hop question's later hops are documents its wording does not match, so no direct route ranks
    # them: below the kept head, the chain's evidence competes at full weight (bundled eval: multi-hop
    # recall@10 0.713 -> 0.831 against 0.775 at the default 0.5, answers unchanged).
    multi_hop_graph_weight: float = 1.0
    # Hybrid as the floor of the other strategies: on an entity question (and a low-confidence route whose
    # runner-up is a lookup) hybrid's first hits keep their places and the graph's evidence competes below
    # them. The learned router sends most entity questions here, and on the test split graph chunks lifted
    # above hybrid's head cost nDCG@10 .803 -> .684 against the rules, which sent them to plain hybrid.
    entity_keep_head: int = 0
    lookup_keep_head: int = 0
    # ... and so do its leading hits that both dense and BM25 rank within this many places (a direct match
    # the two routes agree on; 0: off). The graph's evidence is strongest where hybrid's is weak (a person
    # named in one table row) and weakest where a system has its own overview page, which current claims'
    # evidence pushed down. Tuned on dev only (bundled dev + questions-entity-dev.jsonl, 30 entity questions,
    # docs/evaluation.md): entity nDCG@10 0.772 -> 0.793 at 2 (1: 0.791, 3: 0.789); a fixed head of 1-10
    # (0.753-0.772) or no claim boost (0.739) did not beat no floor at all.
    entity_agreed_rank: int = 2
    # Whether current claims' evidence may re-rank hybrid's own hits on an entity question (else the graph
    # only adds chunks hybrid did not return), and the graph route's weight there (None: `route_weights`).
    entity_claim_boost: bool = True
    entity_graph_weight: float | None = None
    # Multi-hop questions (and questions naming no known entity) are also anchored on the entities named
    # in hybrid's best passages, at this share of a question link's score.
    passage_seed_hits: int = 3
    passage_seed_weight: float = 0.5
    # The whole graph layer (linking, expansion, claims, hydration of its chunks); over it, the answer is
    # hybrid's and flagged. Adapters must bound each call themselves (statement timeouts): a pure-logic
    # core cannot interrupt a call that never returns.
    graph_timeout_s: float = 1.0


@dataclass(frozen=True, slots=True)
class GraphSearchResponse:
    query: str
    hits: tuple[SearchHit, ...]
    mode: str
    limits: dict[str, object]
    route: Route
    graph_lines: tuple[GraphLine, ...] = ()  # only those within the graph share of the budget
    traversal: Traversal | None = None
    links: tuple[LinkedMention, ...] = ()
    context: ContextPack | None = None
    degraded: bool = False
    degraded_reason: str | None = None
    trace_id: str | None = None  # set by the application when it records the search
    paths: tuple[GraphPath, ...] = ()  # only when asked for (include_paths): the walk's readable chains
    entities: tuple[dict[str, object], ...] | None = None  # as SearchResponse.entities
    # For the answer's structured context (kgrag_core.answering.context): the claims read (statuses over what
    # the caller sees), how strongly each entity is tied to the question, and the evidence chunks of the facts
    # about it, loaded through the same ACL recheck as the hits. Not part of the search response body.
    claims: tuple[ClaimRecord, ...] = ()
    entity_weights: Mapping[str, float] = field(default_factory=dict)
    fact_evidence: tuple[SearchHit, ...] = ()

    def as_dict(self) -> dict[str, object]:
        traversal = None
        if self.traversal is not None:
            traversal = {
                "seeds": [s.entity_id for s in self.traversal.seeds],
                "steps": len(self.traversal.steps),
                "max_depth": max((s.depth for s in self.traversal.steps), default=0),
                "truncated": list(self.traversal.truncated),
            }
        out: dict[str, object] = {
            "query": self.query,
            "mode": self.mode,
            "hits": [h.as_dict() for h in self.hits],
            "limits": self.limits,
            "route": self.route.as_dict(),
            "graph_lines": [line.as_dict() for line in self.graph_lines],
            "linked": [
                {
                    "text": lm.mention.text,
                    "entities": [[c.entity.entity.entity_id, round(c.score, 4)] for c in lm.candidates],
                }
                for lm in self.links
            ],
            "traversal": traversal,
            "context": self.context.as_dict() if self.context else None,
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "trace_id": self.trace_id,
        }
        if self.entities is not None:
            out["entities"] = list(self.entities)
        if self.paths:
            out["graph_evidence"] = [p.as_dict() for p in self.paths]
        return out


@dataclass(frozen=True, slots=True)
class GraphFacts:
    """What `facts_for` read: claims, entity weights and the facts' evidence chunks; or why there are none."""

    claims: tuple[ClaimRecord, ...] = ()
    entity_weights: Mapping[str, float] = field(default_factory=dict)
    fact_evidence: tuple[SearchHit, ...] = ()
    edges: tuple[Edge, ...] = ()
    reason: str | None = None


_FACT_SEEDS = 3  # named entities whose edges an answer without a graph walk reads
_FACT_EDGES = 50


@dataclass(frozen=True, slots=True)
class _GraphFindings:
    links: tuple[LinkedMention, ...]
    traversal: Traversal
    lines: tuple[GraphLine, ...]
    chunks: tuple[RouteHit, ...]
    claims: tuple[ClaimRecord, ...] = ()
    weights: Mapping[str, float] = field(default_factory=dict)


class GraphAssistedSearcher:
    def __init__(
        self,
        hybrid: HybridBackend,
        graph: GraphReader,
        *,
        settings: GraphSearchSettings | None = None,
        embedding_search: EmbeddingSearch | None = None,
        token_counter: TokenCounter | None = None,
        clock: Callable[[], float] = time.monotonic,
        router: QuestionRouter | None = None,
    ) -> None:
        self.router: QuestionRouter = router or RuleRouter()
        self.hybrid = hybrid
        self.graph = graph
        self.settings = settings or GraphSearchSettings()
        self.embedding_search = embedding_search
        self.token_counter: TokenCounter = token_counter or EstimatedTokens()
        self.clock = clock

    def search(
        self,
        query: str,
        caller: Caller,
        top_k: int | None = None,
        *,
        filters: SearchFilters | None = None,
        kind: QuestionKind | None = None,
        max_hops: int | None = None,
        include_paths: bool = False,
        graph_required: bool = False,
        chosen: Route | None = None,
    ) -> GraphSearchResponse:
        """`filters` run inside every route, the graph's included (only admitted evidence counts); `kind`
        overrides the router (a requested mode); `graph_required` reads a routed lookup as a question about
        the entities it names (GRAPH_ASSISTED); `max_hops` caps the expansion depth; `include_paths` adds the
        walk's readable chains (`paths`); `chosen`: a route decided by the caller instead of the router's."""
        if chosen is None:
            chosen = self.router.route(query) if kind is None else forced_route(kind)
        if graph_required and chosen.kind is QuestionKind.LOOKUP:
            chosen = Route(QuestionKind.ENTITY, chosen.confidence, (*chosen.signals, "mode:graph_assisted"))
        k = TOP_K.resolve(top_k)
        if chosen.strategies == (QuestionKind.LOOKUP,):
            plain = self.hybrid.search(query, caller, top_k=k, filters=filters)
            return self._plain(plain, chosen, reason=None, why_not="lookup")

        cfg = self.settings
        base = self.hybrid.search(query, caller, top_k=min(TOP_K.maximum, max(k, cfg.pool)), filters=filters)
        started = self.clock()
        request = _GraphRequest(filters, max_hops, include_paths)
        with stage("graph"):
            return self._graph_layer(base, chosen, caller, k, started, request)

    def _graph_layer(
        self,
        base: SearchResponse,
        chosen: Route,
        caller: Caller,
        k: int,
        started: float,
        request: _GraphRequest | None = None,
    ) -> GraphSearchResponse:
        cfg = self.settings
        request = request or _GraphRequest()
        filters = request.filters
        try:
            allowed = readable_classes(self.hybrid.acls.acl_classes(), caller)
            if not allowed:
                return self._plain(base, chosen, reason=None, why_not="nothing readable", k=k)
            graph = self._graph_for(allowed, filters)
            findings = self._graph_findings(base, chosen, allowed, graph=graph, max_hops=request.max_hops)
            if findings is None:
                return self._plain(base, chosen, reason=None, why_not="no entity linked", k=k)
            may_boost = _current_claim_chunks(findings.lines)
            graph_weight = None
            if QuestionKind.MULTI_HOP in chosen.strategies:
                relevance = relation_relevance(base.query, cfg.expansion.relation_cues)
                may_boost |= _chain_chunks(findings.traversal, relevance)
                graph_weight = cfg.multi_hop_graph_weight
            elif QuestionKind.ENTITY in chosen.strategies:
                graph_weight = cfg.entity_graph_weight
                if not cfg.entity_claim_boost and QuestionKind.TEMPORAL not in chosen.strategies:
                    may_boost = frozenset()
            keep_head = hybrid_floor(cfg, chosen.strategies, base.hits)
            hits, limits = self._fuse(
                base, findings.chunks, set(allowed), k, may_boost, keep_head, filters=filters, graph_weight=graph_weight
            )
            paths = self._paths(findings.traversal, set(allowed), filters) if request.include_paths else ()
            fact_evidence = self._fact_evidence(base.query, findings, hits, set(allowed))
            elapsed = self.clock() - started
        except Exception as err:
            # Not swallowed: the response says degraded with the reason, and operators get the traceback.
            log.warning("graph layer failed, answering from hybrid search: %s", err, exc_info=True)
            return self._plain(base, chosen, reason=describe_failure(err), k=k)
        if elapsed > cfg.graph_timeout_s:
            reason = f"timeout: graph layer took {elapsed * 1000:.0f} ms (limit {cfg.graph_timeout_s * 1000:.0f} ms)"
            return self._plain(base, chosen, reason=reason, k=k)

        context = pack_context(
            findings.lines,
            hits,
            budget_tokens=cfg.budget_tokens,
            counter=self.token_counter,
            line_share=cfg.line_share,
        )
        limits["graph_ms"] = round(elapsed * 1000, 1)
        limits["graph"] = {"used": True, "lines": len(findings.lines), "chunks": len(findings.chunks)}
        return GraphSearchResponse(
            query=base.query,
            hits=hits,
            mode=GRAPH_MODE,
            limits=limits,
            route=chosen,
            graph_lines=context.lines,
            traversal=findings.traversal,
            links=findings.links,
            context=context,
            paths=paths,
            claims=findings.claims,
            entity_weights=dict(findings.weights),
            fact_evidence=fact_evidence,
        )

    def facts_for(self, question: str, caller: Caller, hits: Sequence[SearchHit]) -> GraphFacts:
        """The claims about the entities a question names, for an answer whose search did not use the graph
        (a lookup, or the graph switched off for the call): linking and one claims read, no walk. Any failure
        or overrun gives no facts and the reason; the answer is then composed from its chunks alone."""
        started = self.clock()
        try:
            allowed = readable_classes(self.hybrid.acls.acl_classes(), caller)
            if not allowed:
                return GraphFacts(reason="nothing readable")
            # The alias index only, no embedding search: a fact counts only for an entity the question names
            # (`named_in`), and this runs on every ask, so it must cost a few reads, not a model call.
            # Lower-case names too ("engineering", "the travel freeze"): a fact still counts only for an entity
            # the question names, so the extra spans can add the asked entity's timeline and nothing else.
            links = link_entities(
                question, self.graph, allowed, max_candidates=self.settings.max_link_candidates, lowercase=True
            )
            seeds = seed_entities(links)[: self.settings.claim_entities]
            if not seeds:
                return GraphFacts(reason="no entity linked")
            weights = {s.entity.entity_id: score for s, score in seeds}
            claims = tuple(self.graph.claims_of(list(weights), allowed))
            edges = self._named_edges(question, [s for s, _ in seeds], allowed)
            walk = Traversal(steps=[TraversalStep(e, 1, 1.0) for e in edges])
            findings = _GraphFindings(tuple(links), walk, (), (), claims, weights)
            evidence = self._fact_evidence(question, findings, hits, set(allowed))
        except Exception as err:
            # Not swallowed: the facts say why they are missing, and operators get the traceback.
            log.warning("graph facts failed, answering from the chunks: %s", err, exc_info=True)
            return GraphFacts(reason=describe_failure(err))
        elapsed = self.clock() - started
        if elapsed > self.settings.graph_timeout_s:
            return GraphFacts(reason=f"timeout: graph facts took {elapsed * 1000:.0f} ms")
        return GraphFacts(claims, weights, evidence, tuple(edges))

    def _named_edges(self, question: str, seeds: Sequence[EntitySummary], allowed: Sequence[str]) -> list[Edge]:
        """The seeds' edges the question is about: both ends named in it, or one end and the relation asked.
        Only entities the question names are read, and with one name only the asked relations (none asked:
        no read at all)."""
        asked = relation_relevance(question, self.settings.expansion.relation_cues).relevant
        named = [s for s in seeds if named_in(question, s.entity.name)][:_FACT_SEEDS]
        two_names = len({s.entity.name.casefold() for s in named}) >= 2
        if not named or not (two_names or asked):
            return []
        relations = None if two_names else sorted(asked)
        out: dict[str, Edge] = {}
        for seed in named:
            for edge in self.graph.neighbours(seed.entity.entity_id, allowed, relations=relations, limit=_FACT_EDGES):
                ends = sum(named_in(question, end.name) for end in (edge.subject, edge.object))
                if ends == 2 or (ends == 1 and edge.relation in asked):
                    out.setdefault(edge.relation_id, edge)
        return list(out.values())

    def _fact_evidence(
        self, question: str, findings: _GraphFindings, hits: Sequence[SearchHit], allowed: set[str]
    ) -> tuple[SearchHit, ...]:
        """The chunks the facts about the question rest on, through the hybrid searcher's ACL recheck."""
        edges = [step.edge for step in findings.traversal.steps]
        have = {h.chunk_id: h for h in hits}
        wanted = fact_chunk_ids(question, findings.claims, edges)
        missing = [FusedCandidate(c, 0.0) for c in wanted if c not in have]
        loaded = {h.chunk_id: h for _, h in self.hybrid.hydrate(missing, allowed, len(missing))} if missing else {}
        return tuple(have.get(c) or loaded[c] for c in wanted if c in have or c in loaded)

    def _graph_for(self, allowed: Sequence[str], filters: SearchFilters | None) -> GraphReader:
        """The graph as the filters let this caller see it: only evidence of admitted documents counts."""
        if filters is None or filters.is_empty:
            return self.graph
        readable = set(allowed)

        def admit(chunk_ids: Sequence[str]) -> set[str]:
            return self._readable_chunks(chunk_ids, readable, filters)

        return FilteredGraphReader(self.graph, filters, admit)

    def _readable_chunks(self, chunk_ids: Sequence[str], allowed: set[str], filters: SearchFilters | None) -> set[str]:
        """The chunks this caller may read that the filters admit, by the hybrid searcher's own recheck."""
        if not chunk_ids:
            return set()
        candidates = [FusedCandidate(c, 0.0) for c in chunk_ids]
        loaded = self.hybrid.hydrate(candidates, allowed, len(candidates), filters=filters)
        return {hit.chunk_id for _, hit in loaded}

    def _paths(self, traversal: Traversal, allowed: set[str], filters: SearchFilters | None) -> tuple[GraphPath, ...]:
        evidence = sorted({c for step in traversal.steps for c in step.edge.evidence_chunk_ids})
        return graph_paths(traversal, self._readable_chunks(evidence, allowed, filters))

    def _graph_findings(
        self,
        base: SearchResponse,
        chosen: Route,
        allowed: Sequence[str],
        *,
        graph: GraphReader | None = None,
        max_hops: int | None = None,
    ) -> _GraphFindings | None:
        """The findings of each graph strategy the route runs; two (a low-confidence route and its runner-up)
        are fused: their chunks by RRF, their lines in turn, the first strategy's links and walk reported."""
        kinds = [kind for kind in chosen.strategies if kind is not QuestionKind.LOOKUP]
        found = [
            f
            for f in (self._findings_for(base, kind, allowed, graph=graph, max_hops=max_hops) for kind in kinds)
            if f is not None
        ]
        if len(found) < 2:
            return found[0] if found else None
        first, second = found
        fused = reciprocal_rank_fusion({"a": first.chunks, "b": second.chunks}, k=self.hybrid.rrf_k)
        chunks = tuple(RouteHit(c.chunk_id, c.score, rank) for rank, c in enumerate(fused, start=1))
        seen = {line.text for line in first.lines}
        lines = first.lines + tuple(line for line in second.lines if line.text not in seen)
        claims = first.claims + tuple(c for c in second.claims if c not in first.claims)
        return _GraphFindings(
            first.links,
            first.traversal,
            lines,
            chunks[: self.settings.graph_candidates],
            claims,
            {**second.weights, **first.weights},
        )

    def _findings_for(
        self,
        base: SearchResponse,
        kind: QuestionKind,
        allowed: Sequence[str],
        *,
        graph: GraphReader | None = None,
        max_hops: int | None = None,
    ) -> _GraphFindings | None:
        cfg = self.settings
        reader = graph or self.graph
        text = base.query
        links = link_entities(
            text,
            reader,
            allowed,
            embedding_search=self.embedding_search,
            max_candidates=cfg.max_link_candidates,
        )
        seeds = seed_entities(links)
        if kind is QuestionKind.MULTI_HOP or not seeds:
            named = {s.entity.entity_id for s, _ in seeds}
            passages = [h.text for h in base.hits[: cfg.passage_seed_hits]]
            anchored = passage_seeds(passages, reader, allowed, weight=cfg.passage_seed_weight)
            seeds += [(e, score) for e, score in anchored if e.entity.entity_id not in named]
        if not seeds:
            return None
        expansion = cfg.expansion if max_hops is None else _capped(cfg.expansion, kind, max_hops)
        traversal = expand(seeds, reader, allowed, question=text, kind=kind, settings=expansion, clock=self.clock)
        weights: dict[str, float] = {s.entity.entity_id: score for s, score in seeds}
        for step in traversal.steps:
            for end in (step.edge.subject, step.edge.object):
                if step.score > weights.get(end.entity_id, 0.0):
                    weights[end.entity_id] = step.score
        about = [e for e, _ in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[: cfg.claim_entities]]
        claims = reader.claims_of(about, allowed)
        evidence = gather_evidence(
            traversal,
            claims,
            question=text,
            kind=kind,
            entity_weights=weights,
            max_chunks=cfg.graph_candidates,
        )
        return _GraphFindings(tuple(links), traversal, evidence.lines, evidence.chunks, tuple(claims), weights)

    def _fuse(
        self,
        base: SearchResponse,
        graph_chunks: Sequence[RouteHit],
        allowed: set[str],
        k: int,
        may_boost: frozenset[str] = frozenset(),
        keep_head: int = 0,
        *,
        filters: SearchFilters | None = None,
        graph_weight: float | None = None,
    ) -> tuple[tuple[SearchHit, ...], dict[str, object]]:
        """Weighted RRF over the hybrid routes (rebuilt from its hits' ranks) and the graph route, whose weight
        is `graph_weight` when given (else the settings'); hybrid's first `keep_head` hits keep their places."""
        routes: dict[str, list[RouteHit]] = {}
        for name in ("dense", "bm25"):
            ranked = sorted((h.ranks[name], h.chunk_id) for h in base.hits if name in h.ranks)
            routes[name] = [RouteHit(chunk_id, 0.0, rank) for rank, chunk_id in ranked]
        # The graph route adds chunks hybrid did not return, and re-ranks hybrid's own hits only with the
        # evidence of current claims (the latest value above an outdated one). On the bundled eval every loss
        # came from relation evidence of a linked, well-connected entity (the company) lifting a chunk hybrid
        # had ranked ~10th above hybrid's top hit; the route weight alone protects only graph-only chunks.
        known = {h.chunk_id: h for h in base.hits}
        routes["graph"] = [c for c in graph_chunks if c.chunk_id not in known or c.chunk_id in may_boost]
        weights = dict(self.settings.route_weights)
        if graph_weight is not None:
            weights["graph"] = graph_weight
        fused = reciprocal_rank_fusion(routes, k=self.hybrid.rrf_k, weights=weights)

        # Only chunks the graph alone brought still need loading; they get hybrid's ACL recheck here.
        unseen = [c for c in fused if c.chunk_id not in known]
        for _, loaded in self.hybrid.hydrate(unseen, allowed, len(unseen), filters=filters) if unseen else []:
            known[loaded.chunk_id] = loaded
        if keep_head:
            # The chain's hops belong after the head that answers the first hop, not above it: lifting every
            # hop's evidence pushed hybrid's first hit to 8th on a multi-hop question, and the extractive
            # answer, which quotes the top chunks, abstained.
            fused = head_first(fused, [h.chunk_id for h in base.hits[:keep_head]])
        return fused_hits(
            fused, known, k, base_limits=base.limits, routes=routes, weights=weights, fused_count=len(fused)
        )

    def _plain(
        self,
        response: SearchResponse,
        chosen: Route,
        *,
        reason: str | None,
        why_not: str | None = None,
        k: int | None = None,
    ) -> GraphSearchResponse:
        hits = response.hits if k is None else response.hits[:k]
        limits = dict(response.limits)
        if k is not None:
            limits["top_k"] = k
            limits["truncated"] = bool(response.limits.get("truncated")) or len(response.hits) > k
        limits["graph"] = {"used": False, "reason": reason or why_not}
        context = pack_context((), hits, budget_tokens=self.settings.budget_tokens, counter=self.token_counter)
        return GraphSearchResponse(
            query=response.query,
            hits=hits,
            mode=response.mode,
            limits=limits,
            route=chosen,
            context=context,
            degraded=reason is not None,
            degraded_reason=reason,
        )


@dataclass(frozen=True, slots=True)
class _GraphRequest:
    filters: SearchFilters | None = None
    max_hops: int | None = None
    include_paths: bool = False


def hybrid_floor(
    settings: GraphSearchSettings, strategies: Sequence[QuestionKind], hybrid_hits: Sequence[SearchHit] = ()
) -> int:
    """How many of hybrid's first hits keep their places for a route running `strategies`: the largest
    floor any of them asks for, so fusing two strategies never ranks below what either alone would keep."""
    entity = settings.entity_keep_head
    if settings.entity_agreed_rank:
        entity = max(entity, agreed_head(hybrid_hits, settings.entity_agreed_rank))
    floors = {
        QuestionKind.MULTI_HOP: settings.keep_head,
        QuestionKind.ENTITY: entity,
        QuestionKind.LOOKUP: settings.lookup_keep_head,
    }
    return max((floors.get(kind, 0) for kind in strategies), default=0)


def agreed_head(hits: Sequence[SearchHit], within: int) -> int:
    """How many of `hits` in a row, from the first, both dense and BM25 rank within `within` places."""
    count = 0
    for hit in hits:
        if max(hit.ranks.get("dense", within + 1), hit.ranks.get("bm25", within + 1)) > within:
            break
        count += 1
    return count


def forced_route(kind: QuestionKind) -> Route:
    """The route of a requested mode: the caller chose the kind, so the router is not asked."""
    return Route(kind, 1.0, (f"mode:{kind.value}",))


def _capped(settings: ExpansionSettings, kind: QuestionKind, max_hops: int) -> ExpansionSettings:
    """A multi-hop walk goes as far as the request allows; other kinds keep their depth up to that cap."""
    depths = dict(settings.depth_by_kind)
    depths[kind] = max_hops if kind is QuestionKind.MULTI_HOP else min(depths.get(kind, 1), max_hops)
    return replace(settings, depth_by_kind=depths)


def _chain_chunks(traversal: Traversal, relevance: RelationRelevance) -> frozenset[str]:
    """Evidence of the edges a multi-hop question asks about ("leads", "owns", "caused"): the hops direct
    retrieval cannot reach by wording, so on a multi-hop question they may re-rank as well as add."""
    if not relevance.relevant:
        return frozenset()
    return frozenset(
        c for step in traversal.steps if step.edge.relation in relevance.relevant for c in step.edge.evidence_chunk_ids
    )


def _current_claim_chunks(lines: Sequence[GraphLine]) -> frozenset[str]:
    """Evidence of claims that are current (not superseded, conflicting, planned or negated)."""
    return frozenset(c for line in lines if line.kind == "claim" and not line.marks for c in line.chunk_ids)
