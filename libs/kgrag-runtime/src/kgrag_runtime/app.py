"""The application: the use cases wired to one process's adapters, embedded or distributed.

The CLI and the HTTP API both drive this object; neither touches an adapter directly.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING

from kgrag_core.acl import AclClass, Caller
from kgrag_core.answering.context import AnswerContext, asks_a_known_fact, build_context, chunks_only, merge_facts
from kgrag_core.answering.model import Answer, RemovedSentence
from kgrag_core.answering.sealed_cache import open_answer, seal_answer
from kgrag_core.answering.verification import verify_answer
from kgrag_core.ask_modes import AskMode, ModePlan, plan_mode
from kgrag_core.connectors import ConnectorItem
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.filters import SearchFilters
from kgrag_core.graph.routing import RoutedGraphReader
from kgrag_core.graph_retrieval.router import QuestionKind
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher, GraphFacts, GraphSearchResponse
from kgrag_core.ingest import IngestOutcome
from kgrag_core.limits import EVIDENCE_CHUNKS, MAX_HOPS
from kgrag_core.ports import Cache, ChatModel, CurationSource, IngestLog, ObjectStore, StatsSource
from kgrag_core.retrieval.hybrid import HybridSearcher, SearchMode
from kgrag_core.retrieval.query_vectors import one_embedding_per_search
from kgrag_core.search import SearchResponse
from kgrag_core.shredding import ContentCipher
from kgrag_core.text_graph.searcher import TextGraphSearcher
from kgrag_core.tracing.build import answer_part, cached_answer_body, search_body
from kgrag_core.tracing.model import TraceKind
from kgrag_core.tracing.timing import measuring, stage
from kgrag_runtime.answer_flow import answer_verified
from kgrag_runtime.ask_contract import (
    check_filters,
    cite_versions,
    global_part,
    graph_evidence,
    linked_entities,
    request_part,
    strategy_used,
)
from kgrag_runtime.ask_stream import AskEvent, ask_events
from kgrag_runtime.ingest_gateway import EmbeddedIngest, IngestGateway, ProgressCallback
from kgrag_runtime.quality_metrics import QualityMetrics, graph_fallback_reason


@dataclass(frozen=True, slots=True)
class AskRequestOptions:
    """The ask contract's options beyond the question (POST /v1/ask `mode`, `filters`, `options`)."""

    mode: AskMode = AskMode.AUTO
    filters: SearchFilters | None = None
    max_hops: int | None = None
    include_graph_paths: bool = False
    style: str = "composed"  # the extractive answerer: composed from facts, or today's best sentences

    @property
    def requested(self) -> bool:
        return self != AskRequestOptions(style=self.style)

    @property
    def as_of(self) -> date | None:
        return self.filters.as_of if self.filters is not None else None

    def key(self) -> str:
        """Part of the answer-cache key: another mode, filter or option is another answer."""
        filters = self.filters.key() if self.filters is not None else "-"
        return f"{self.mode.value}|{filters}|{self.max_hops}|{self.include_graph_paths}|{self.style}"


ANSWER_STYLES = ("composed", "sentences")

if TYPE_CHECKING:  # built only when extraction is on; a search never imports them
    from kgrag_core.communities.global_route import GlobalResult
    from kgrag_runtime.community_admin import CommunityAdmin
    from kgrag_runtime.evaluation.service import EvalService
    from kgrag_runtime.extraction_admin import ExtractionAdmin
    from kgrag_runtime.global_answers import GlobalAnswerer
    from kgrag_runtime.graph_admin import GraphAdmin
    from kgrag_runtime.traces import TraceRecorder


@dataclass(slots=True)
class KgragApp:
    searcher: HybridSearcher
    ingestion: IngestGateway
    ingest_log: IngestLog
    stats_source: StatsSource
    cache: Cache
    llm: ChatModel | None
    answer_cache_ttl_s: int = 300
    extraction: ExtractionAdmin | None = None  # None when KGRAG_EXTRACTION_ENABLED=false
    graph_searcher: GraphAssistedSearcher | None = None
    graph_by_default: bool = False
    graph: GraphAdmin | None = None  # the entity API; None when extraction is off
    # Seals cached answers under every cited document's key (kgrag_core.answering.sealed_cache); the
    # stores' cipher. None: cached as they are (only for apps without document keys, e.g. test doubles).
    answer_cipher: ContentCipher | None = None
    traces: TraceRecorder | None = None  # None: searches and asks are not traced (trace_id null)
    curation: CurationSource | None = None  # conflicts and weak edges for the curation queue
    quality: QualityMetrics = field(default_factory=QualityMetrics)  # served at /metrics by the HTTP API
    evaluation: EvalService | None = None  # eval runs on isolated indexes (POST /v1/admin/eval/run)
    graph_reads: RoutedGraphReader | None = None  # distributed, Neo4j configured: where graph reads went
    # Without an LLM: "composed" (graph facts in words, then prose sentences; kgrag_core.answering.compose) or
    # "sentences" (the best supporting sentences only, the answerer before facts reached answers).
    answer_style: str = "composed"
    # The GLOBAL route over community views (issue 12); None: GLOBAL answers from hybrid, flagged.
    global_answers: GlobalAnswerer | None = None
    communities: CommunityAdmin | None = None  # communities over the entity graph (docs/communities.md)
    # The text graph (KGRAG_TEXT_GRAPH): None when it is not built; `search(text_graph=...)` per call.
    text_graph_searcher: TextGraphSearcher | None = None
    text_graph_by_default: bool = False
    # Where the stored bodies are (GET /v1/documents/{id} reads a document's text there), opened on first
    # use (the distributed query API connects to S3 only when a document is read); None: not served.
    body_store: Callable[[], ObjectStore] | None = None

    def __post_init__(self) -> None:
        if self.communities is not None and self.global_answers is not None and self.communities.summarise is None:
            self.communities.summarise = self.global_answers.summary_of  # `show` gives the caller's summary
        if self.graph is not None and self.quality.backlog is None:
            self.quality.backlog = self.graph.store.backlog_counts

    def require_extraction(self) -> ExtractionAdmin:
        """The extraction admin, or CONFIGURATION_INVALID when extraction is switched off."""
        if self.extraction is None:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                "Extraction is switched off.",
                hint="Set KGRAG_EXTRACTION_ENABLED=true (the default) and ingest again.",
            )
        return self.extraction

    def require_traces(self) -> TraceRecorder:
        if self.traces is None:
            raise KgragError(ErrorCode.CONFIGURATION_INVALID, "Query traces are not recorded by this process.")
        return self.traces

    def require_evaluation(self) -> EvalService:
        if self.evaluation is None:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                "Evaluation runs are not available in this process.",
                hint="The query API of either runtime provides them (docs/evaluation.md).",
            )
        return self.evaluation

    def require_communities(self) -> CommunityAdmin:
        """The community API, or CONFIGURATION_INVALID when communities (or the graph) are switched off."""
        if self.communities is None:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                "Communities are switched off.",
                hint="Set KGRAG_EXTRACTION_ENABLED=true and KGRAG_COMMUNITIES_ENABLED=true (the defaults).",
            )
        return self.communities

    def require_graph(self) -> GraphAdmin:
        """The entity API, or CONFIGURATION_INVALID when the knowledge graph is switched off."""
        if self.graph is None:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                "The knowledge graph is switched off.",
                hint="Set KGRAG_EXTRACTION_ENABLED=true (the default) and ingest again.",
            )
        return self.graph

    # --- ingestion -----------------------------------------------------------------------------------

    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]:
        """Submit documents (embedded: indexed when this returns; distributed: queued on Kafka)."""
        return self.ingestion.ingest(items, progress=progress)

    def delete(self, doc_id: str) -> IngestOutcome:
        return self.ingestion.delete(doc_id)

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome:
        return self.ingestion.change_acl(doc_id, acl)

    # --- queries -------------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        caller: Caller,
        *,
        top_k: int | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        graph: bool | None = None,
        filters: SearchFilters | None = None,
        include_entities: bool = False,
        max_hops: int | None = None,
        include_graph_paths: bool = False,
        text_graph: bool | None = None,
    ) -> SearchResponse | GraphSearchResponse:
        """Hybrid search; with the graph layer (graph=True, or the configured default) the question is routed
        and, unless it is a lookup, graph evidence joins the fusion. Only hybrid mode has a graph layer.
        `filters` (sources, document date, as_of) run inside every route; `include_entities` lists the
        entities the query links to; `max_hops` and `include_graph_paths` as for `ask` (graph layer only).
        `text_graph` walks the text graph on top of hybrid search instead of the knowledge-graph layer (None:
        KGRAG_TEXT_GRAPH, where the graph layer is not in use); `limits["text_graph"]` says whether it was
        used, why not, or that it degraded. The response carries the id of its trace (`trace_id`)."""
        hops = MAX_HOPS.resolve(max_hops) if max_hops is not None else None
        check_filters(filters, caller, self.searcher.documents, self.searcher.acls)
        with measuring() as timings:
            response = self._search(
                query,
                caller,
                top_k=top_k,
                mode=mode,
                graph=graph,
                filters=filters,
                max_hops=hops,
                include_paths=include_graph_paths,
                text_graph=text_graph,
            )
            if include_entities:
                entities = linked_entities(query, caller, self.graph_searcher, self.searcher.acls)
                response = replace(response, entities=tuple(entities))
        if self.traces is None:
            return response
        request: dict[str, object] = {"top_k": top_k, "mode": mode.value, "graph": graph}
        if text_graph is not None:
            request["text_graph"] = text_graph
        if filters is not None and not filters.is_empty:
            request["filters"] = filters.as_dict()
        body = search_body(
            response, caller, request=request, versions=self.traces.versions(), timings_ms=timings.rounded()
        )
        return replace(response, trace_id=self.traces.record(TraceKind.SEARCH, caller, body))

    def _search(
        self,
        query: str,
        caller: Caller,
        *,
        top_k: int | None,
        mode: SearchMode,
        graph: bool | None,
        filters: SearchFilters | None = None,
        plan: ModePlan | None = None,
        max_hops: int | None = None,
        include_paths: bool = False,
        text_graph: bool | None = None,
    ) -> SearchResponse | GraphSearchResponse:
        started = time.perf_counter()
        if mode is SearchMode.HYBRID and self._use_text_graph(text_graph, graph):
            return self._text_graph_search(query, caller, top_k=top_k, filters=filters, started=started)
        if self._use_graph(graph) and mode is SearchMode.HYBRID and self.graph_searcher is not None:
            found = self.graph_searcher.search(
                query,
                caller,
                top_k=top_k,
                filters=filters,
                kind=plan.kind if plan else None,
                max_hops=max_hops,
                include_paths=include_paths,
                graph_required=plan.lookup_as_entity if plan else False,
            )
            self.quality.record_stage("retrieval", time.perf_counter() - started)
            self._record_graph(found)
            return found
        response = self.searcher.search(query, caller, top_k=top_k, mode=mode, filters=filters)
        self.quality.record_stage("retrieval", time.perf_counter() - started)
        self.quality.record_search(mode.value)
        return response

    def _text_graph_search(
        self, query: str, caller: Caller, *, top_k: int | None, filters: SearchFilters | None, started: float
    ) -> SearchResponse:
        if self.text_graph_searcher is None:
            plain = self.searcher.search(query, caller, top_k=top_k, filters=filters)
            limits = plain.limits | {"text_graph": {"used": False, "degraded": False, "reason": "not built"}}
            found = replace(plain, limits=limits)
        else:
            found = self.text_graph_searcher.search(query, caller, top_k=top_k, filters=filters)
        self.quality.record_stage("retrieval", time.perf_counter() - started)
        self.quality.record_search(found.mode)
        info = found.limits.get("text_graph")
        if isinstance(info, dict):
            self.quality.record_text_graph_search(info)
        return found

    def _record_graph(self, found: GraphSearchResponse) -> None:
        info = found.limits.get("graph")
        why_not = info.get("reason") if isinstance(info, dict) and not info.get("used") else None
        self.quality.record_search(
            found.route.kind.value,
            graph_reason=graph_fallback_reason(why_not, found.degraded_reason),
            degraded=found.degraded,
        )
        graph_ms = found.limits.get("graph_ms")
        if isinstance(graph_ms, int | float):
            self.quality.record_stage("graph", graph_ms / 1000)

    def ask(
        self,
        question: str,
        caller: Caller,
        *,
        evidence_chunks: int | None = None,
        graph: bool | None = None,
        mode: AskMode = AskMode.AUTO,
        filters: SearchFilters | None = None,
        max_hops: int | None = None,
        include_graph_paths: bool = False,
        as_of: date | None = None,
        answer_style: str | None = None,
    ) -> dict[str, object]:
        """Answer with citations. Cached per caller scope, mode, filters and options; any index change
        invalidates the cache. Every ask, cached or not, is traced (`trace_id`). `mode` picks the strategy
        (AUTO: the router and `graph`); `filters` run inside every route; `max_hops` caps the graph walk
        (MAX_HOPS); `include_graph_paths` adds `graph_evidence`. `as_of` is `filters.as_of` (answer from the
        claims' timeline as the documents stood that day); `answer_style` overrides the app's (composed |
        sentences) for this call."""
        options = self._ask_options(caller, mode, filters, max_hops, include_graph_paths, as_of, answer_style)
        # One embedding of the question for the whole ask: hybrid, the router and the GLOBAL route's relevance.
        with measuring() as timings, one_embedding_per_search():
            out, response, removed = self._ask(question, caller, evidence_chunks, graph, options)
        if self.traces is None:
            return {**out, "trace_id": None}
        cached = response is None
        request: dict[str, object] = {"evidence_chunks": evidence_chunks, "graph": graph}
        if options.requested:
            request.update(request_part(options.mode, options.filters, options.max_hops, include_graph_paths))
        versions, ms = self.traces.versions(), timings.rounded()
        if response is None:
            body = cached_answer_body(question, caller, request=request, versions=versions, timings_ms=ms)
        else:
            body = search_body(response, caller, request=request, versions=versions, timings_ms=ms)
        part = answer_part(out, cached=cached, removed=removed)
        strategy = out.get("strategy_used")
        if isinstance(strategy, dict) and "communities" in strategy:  # the GLOBAL route: what it read
            part["communities"] = strategy["communities"]
        body["answer"] = part
        return {**out, "trace_id": self.traces.record(TraceKind.ASK, caller, body)}

    def ask_stream(
        self,
        question: str,
        caller: Caller,
        *,
        evidence_chunks: int | None = None,
        graph: bool | None = None,
        mode: AskMode = AskMode.AUTO,
        filters: SearchFilters | None = None,
        max_hops: int | None = None,
        include_graph_paths: bool = False,
        as_of: date | None = None,
        answer_style: str | None = None,
    ) -> Iterator[AskEvent]:
        """`ask` as events: the route and citable sources, each verified sentence as it is ready, then
        conflicts, graph evidence, confidence and the whole body with its trace id (kgrag_runtime.ask_stream).
        The same contract as `ask`; bad filters are refused before the first event."""
        options = self._ask_options(caller, mode, filters, max_hops, include_graph_paths, as_of, answer_style)
        return ask_events(self, question, caller, options, evidence_chunks=evidence_chunks, graph=graph)

    def _ask(
        self,
        question: str,
        caller: Caller,
        evidence_chunks: int | None,
        graph: bool | None,
        options: AskRequestOptions | None = None,
    ) -> tuple[dict[str, object], SearchResponse | GraphSearchResponse | None, tuple[RemovedSentence, ...]]:
        """The answer, the search it read (None when it came from the cache) and the sentences it removed."""
        options = options or AskRequestOptions()
        n = EVIDENCE_CHUNKS.resolve(evidence_chunks)
        plan = self._plan(graph, options)
        key = self._answer_key(question, caller, n, plan.use_graph, options.key())
        cached = self._cached_answer(key)
        if cached is not None:
            return {**json.loads(cached), "cached": True}, None, ()
        started = time.perf_counter()
        response = self._ask_search(question, caller, n, plan, options)
        answering = time.perf_counter()
        found = self._global(question, caller, response, options, graph)
        with stage("answer"):
            answer, found = self._global_answer(question, caller, response, options, found)
        done = time.perf_counter()
        self.quality.record_stage("answer", done - answering)
        self.quality.record_stage("ask", done - started)
        self.quality.record_answer(
            answer.mode.value, answer.confidence, removed_sentences=answer.removed_sentences, fallback=answer.fallback
        )
        out = self._answer_body(answer.as_dict(), response, options, plan)
        if found is not None:
            global_part(out, found)
        # A fallback answer is not cached: once the model is back, the next ask should get its answer.
        if self.answer_cache_ttl_s > 0 and answer.fallback is None:
            plain = json.dumps(out).encode("utf-8")
            payload = (
                plain
                if self.answer_cipher is None
                else seal_answer(self.answer_cipher, self._cited_documents(response), plain)
            )
            if payload is not None:  # None: a cited document was deleted meanwhile, nothing to cache
                self.cache.set(key, payload, self.answer_cache_ttl_s)
        return {**out, "cached": False}, response, answer.removed

    def _global(
        self,
        question: str,
        caller: Caller,
        response: SearchResponse | GraphSearchResponse,
        options: AskRequestOptions,
        graph: bool | None = None,
    ) -> GlobalResult | None:
        """The GLOBAL route's themes, when the ask takes it (mode GLOBAL, or under AUTO the router's global
        route when the answerer follows it and the ask did not turn the graph layer off with `graph=False`)
        and it found any; None: the ask answers as before (GLOBAL: flagged)."""
        answers = self.global_answers
        if answers is None:
            return None
        auto = options.mode is AskMode.AUTO and answers.on_router and graph is not False
        if not (options.mode is AskMode.GLOBAL or (auto and self._routed_global(question, response))):
            return None
        if not answers.available():
            return None
        with stage("global"):
            found = answers.themes(question, caller, response.hits)
        return found if found.themes else None

    def _routed_global(self, question: str, response: SearchResponse | GraphSearchResponse) -> bool:
        """Whether the router calls the question global: the graph search's route, or without the graph
        layer on this ask the same router asked directly (so AUTO routes global questions either way)."""
        if isinstance(response, GraphSearchResponse):
            return response.route.kind is QuestionKind.GLOBAL
        return (
            self.graph_searcher is not None and self.graph_searcher.router.route(question).kind is QuestionKind.GLOBAL
        )

    def _global_answer(
        self,
        question: str,
        caller: Caller,
        response: SearchResponse | GraphSearchResponse,
        options: AskRequestOptions,
        found: GlobalResult | None,
    ) -> tuple[Answer, GlobalResult | None]:
        """The verified answer of an ask, streamed or not: without themes the hybrid (or graph) answer; with
        them the themes fused with that answer's cited passages (`with_passages`), so the GLOBAL answer cites
        every document the answer it replaces would have cited."""
        answer = self._answer(question, caller, response, options)
        if found is None or self.global_answers is None:
            return answer, None
        from kgrag_core.communities.global_route import with_passages

        fused = with_passages(
            found, answer.citations, [h.doc_id for h in response.hits], self.global_answers.settings.rrf_k
        )
        return verify_answer(fused.answer(), ()), fused

    def _plan(self, graph: bool | None, options: AskRequestOptions) -> ModePlan:
        """Which strategy the ask runs: the router and `graph` under AUTO, else what `mode` names."""
        graph_available = self.graph_searcher is not None
        if options.mode is AskMode.AUTO:
            return ModePlan(self._use_graph(graph) and graph_available, None)
        return plan_mode(options.mode, graph_default=self.graph_by_default, graph_available=graph_available)

    def _ask_search(
        self, question: str, caller: Caller, n: int, plan: ModePlan, options: AskRequestOptions
    ) -> SearchResponse | GraphSearchResponse:
        """The search an ask reads, streamed or not."""
        return self._search(
            question,
            caller,
            top_k=n,
            mode=SearchMode.HYBRID,
            graph=plan.use_graph,
            filters=options.filters,
            plan=plan,
            max_hops=options.max_hops,
            include_paths=options.include_graph_paths,
        )

    def _answer_body(
        self,
        out: dict[str, object],
        response: SearchResponse | GraphSearchResponse,
        options: AskRequestOptions,
        plan: ModePlan,
    ) -> dict[str, object]:
        """An answer's dict with what the ask contract adds: route, strategies, filters, versions, paths."""
        if isinstance(response, GraphSearchResponse):
            out["route"] = response.route.as_dict()
            out["graph_lines"] = [line.text for line in response.graph_lines]
            out["graph_degraded"] = response.degraded
        out["strategy_used"] = strategy_used(response, options.mode, plan)
        out["global_fallback"] = plan.global_fallback
        out["filters"] = (options.filters or SearchFilters()).as_dict()
        cite_versions(out, response)
        out.setdefault("conflicts", [])  # filled by the fact-aware answerer (issue 11, D1)
        if options.include_graph_paths:
            out["graph_evidence"] = graph_evidence(response)
        return out

    def _ask_options(
        self,
        caller: Caller,
        mode: AskMode,
        filters: SearchFilters | None,
        max_hops: int | None,
        include_graph_paths: bool,
        as_of: date | None,
        answer_style: str | None,
    ) -> AskRequestOptions:
        """The checked options of one ask (streamed or not): bad filters and styles are refused up front."""
        style = self.answer_style if answer_style is None else answer_style
        if style not in ANSWER_STYLES:
            raise KgragError(
                ErrorCode.INVALID_QUERY, f"Unknown answer style {style!r}.", hint="Use composed or sentences."
            )
        if as_of is not None and (filters is None or filters.as_of is None):
            base = filters or SearchFilters()
            filters = SearchFilters.build(
                sources=base.sources, date_from=base.date_from, date_to=base.date_to, as_of=as_of
            )
        hops = MAX_HOPS.resolve(max_hops) if max_hops is not None else None
        check_filters(filters, caller, self.searcher.documents, self.searcher.acls)
        return AskRequestOptions(mode, filters, hops, include_graph_paths, style)

    def _answer(
        self, question: str, caller: Caller, response: SearchResponse | GraphSearchResponse, options: AskRequestOptions
    ) -> Answer:
        """The verified answer."""
        context = self.answer_context_for(question, caller, response, options)
        return answer_verified(question, response, self.llm, context=context, as_of=options.as_of)

    def answer_context_for(
        self, question: str, caller: Caller, response: SearchResponse | GraphSearchResponse, options: AskRequestOptions
    ) -> AnswerContext | None:
        """The structured context an ask's answerer reads; None for today's sentence picker, which reads no
        facts (the `sentences` style without a model)."""
        if self.llm is None and options.style == "sentences":
            return None
        return self.answer_context(question, caller, response, as_of=options.as_of)

    def answer_context(
        self,
        question: str,
        caller: Caller,
        response: SearchResponse | GraphSearchResponse,
        *,
        as_of: date | None = None,
    ) -> AnswerContext:
        """The structured context of one question: its chunks, and with the graph layer the facts about it."""
        if self.graph_searcher is None:
            return chunks_only(question, response.hits)
        if isinstance(response, GraphSearchResponse) and response.claims:
            facts = GraphFacts(response.claims, response.entity_weights, response.fact_evidence)
            if not asks_a_known_fact(question, facts.claims):
                # The walk holds no claim on what the question asks of the entity it names: read that
                # entity's claims too (issue 11: the current value reaches the answer when retrieval missed it).
                facts = merge_facts(facts, self.graph_searcher.facts_for(question, caller, response.hits))
        else:  # the search did not walk the graph (a lookup, or graph off): read the named entities' claims
            facts = self.graph_searcher.facts_for(question, caller, response.hits)
        traversal = response.traversal if isinstance(response, GraphSearchResponse) else None
        edges = [step.edge for step in traversal.steps] if traversal else list(facts.edges)
        lines = response.graph_lines if isinstance(response, GraphSearchResponse) else ()
        cfg = self.graph_searcher.settings
        ontology = self.extraction.extractor.ontology if self.extraction is not None else None
        cardinality = {name: a.cardinality for name, a in ontology.attributes.items()} if ontology else None
        return build_context(
            question,
            response.hits,
            claims=facts.claims,
            edges=edges,
            paths=[line.text for line in lines if line.kind == "relation"],
            evidence={h.chunk_id: h for h in facts.fact_evidence},
            entity_weights=facts.entity_weights,
            budget_tokens=cfg.budget_tokens,
            counter=self.graph_searcher.token_counter,
            as_of=as_of,
            cardinality=cardinality,
        )

    def _cited_documents(self, response: SearchResponse | GraphSearchResponse) -> set[str]:
        """Every document the answer was built from: its hits', and those of the chunks its graph lines and
        graph paths (entity names, claim values) come from."""
        docs = {h.doc_id for h in response.hits}
        if isinstance(response, GraphSearchResponse):
            chunk_ids = sorted(
                {c for line in response.graph_lines for c in line.chunk_ids}
                | {c for path in response.paths for hop in path.hops for c in hop.chunk_ids}  # graph_evidence names
            )
            if chunk_ids:
                docs |= {c.doc_id for c in self.searcher.documents.get_chunks(chunk_ids).values()}
        return docs

    def _cached_answer(self, key: str) -> bytes | None:
        """The cached answer's JSON, or None: a miss, or an entry one of whose documents is deleted."""
        cached = self.cache.get(key)
        if cached is None or self.answer_cipher is None:
            return cached
        return open_answer(self.answer_cipher, cached)

    def _use_graph(self, graph: bool | None) -> bool:
        return self.graph_by_default if graph is None else graph

    def _use_text_graph(self, text_graph: bool | None, graph: bool | None) -> bool:
        """Asked for, it runs; by default (KGRAG_TEXT_GRAPH) only where the knowledge-graph layer does not."""
        if text_graph is not None:
            return text_graph
        return self.text_graph_by_default and not (self._use_graph(graph) and self.graph_searcher is not None)

    def _answer_key(self, question: str, caller: Caller, n: int, graph: bool, options: str = "") -> str:
        raw = f"{question.strip()}\x1f{n}\x1f{self.llm is not None}\x1f{graph}\x1f{options}"
        digest = hashlib.sha256(raw.encode()).hexdigest()
        return f"ask:{caller.scope_key()}:{self.cache.generation()}:{digest[:32]}"

    # --- status --------------------------------------------------------------------------------------

    def status(self) -> dict[str, object]:
        s = self.stats_source.stats()
        return {
            "documents": s.documents,
            "deleted_documents": s.deleted_documents,
            "chunks": s.chunks,
            "acl_classes": s.acl_classes,
            "cached_vectors": s.cached_vectors,
            "ingest_errors": s.ingest_errors,
            "vector_points": self.searcher.vectors.count(),
            "keyword_docs": self.searcher.keywords.count(),
            "embedding_model": self.searcher.embedder.model_id,
            "llm": self.llm.model_id if self.llm else None,
            "dead_letters": (
                {k: len(v) for k, v in sorted(self.ingestion.bus.dead_letters.items())}
                if isinstance(self.ingestion, EmbeddedIngest)
                else None
            ),
            "extraction": self.extraction.status() if self.extraction is not None else None,
            "traces": self.traces.status() if self.traces is not None else None,
        }
