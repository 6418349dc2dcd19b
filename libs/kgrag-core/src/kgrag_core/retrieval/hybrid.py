"""Hybrid search: dense + BM25 candidates (ACL filter inside each), fused by RRF, rechecked, hydrated."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.chunking.locators import chunk_locator
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.filters import SearchFilters
from kgrag_core.limits import CANDIDATES_PER_ROUTE, QUERY_CHARS, TOP_K
from kgrag_core.ports import AclStore, DocumentStore, Embedder, KeywordIndex, VectorIndex
from kgrag_core.retrieval.fusion import RRF_K, FusedCandidate, reciprocal_rank_fusion
from kgrag_core.search import RouteHit, SearchHit, SearchResponse
from kgrag_core.tracing.timing import stage


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    DENSE = "dense"
    BM25 = "bm25"


@dataclass(frozen=True, slots=True)
class HybridCandidates:
    """What hybrid search has before hydration: the stripped query, the caller's readable classes, the
    fused candidates (best first) and the limits its response reports for `top_k`."""

    query: str
    allowed: tuple[str, ...]
    fused: list[FusedCandidate]
    top_k: int
    limits: dict[str, object]


@dataclass(frozen=True, slots=True)
class HybridSearcher:
    documents: DocumentStore
    acls: AclStore
    vectors: VectorIndex
    keywords: KeywordIndex
    embedder: Embedder
    rrf_k: int = RRF_K

    def search(
        self,
        query: str,
        caller: Caller,
        *,
        top_k: int | None = None,
        candidates: int | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        filters: SearchFilters | None = None,
    ) -> SearchResponse:
        """`filters` (sources, document date) run inside both routes, like the ACL filter."""
        found = self.candidates(query, caller, top_k=top_k, candidates=candidates, mode=mode, filters=filters)
        with stage("hydrate"):
            hydrated = self.hydrate(found.fused, set(found.allowed), found.top_k, filters=filters)
        results = tuple(replace(h, score=c.score, ranks=dict(c.ranks)) for c, h in hydrated)
        return SearchResponse(query=found.query, hits=results, mode=mode.value, limits=dict(found.limits))

    def candidates(
        self,
        query: str,
        caller: Caller,
        *,
        top_k: int | None = None,
        candidates: int | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        filters: SearchFilters | None = None,
    ) -> HybridCandidates:
        """`search` up to the fusion: the fused candidates (ids and ranks), nothing hydrated yet, for a caller
        that hydrates only the few it keeps (the text graph)."""
        text = query.strip()
        if not text:
            raise KgragError(ErrorCode.INVALID_QUERY, "The query is empty.", hint="Pass some words to search.")
        if len(text) > QUERY_CHARS.maximum:
            raise KgragError(
                ErrorCode.LIMIT_EXCEEDED, f"The query has {len(text)} characters; the maximum is {QUERY_CHARS.maximum}."
            )
        k = TOP_K.resolve(top_k)
        per_route = max(CANDIDATES_PER_ROUTE.resolve(candidates), k)
        if per_route > CANDIDATES_PER_ROUTE.maximum:
            per_route = CANDIDATES_PER_ROUTE.maximum

        with stage("acl"):
            allowed = readable_classes(self.acls.acl_classes(), caller)
        routes: dict[str, Sequence[RouteHit]] = {}
        if allowed:
            if mode in (SearchMode.HYBRID, SearchMode.DENSE):
                with stage("embed"):
                    vector = self.embedder.embed_query(text)
                with stage("dense"):
                    routes["dense"] = self.vectors.search(vector, allowed, per_route, filters=filters)
            if mode in (SearchMode.HYBRID, SearchMode.BM25):
                with stage("bm25"):
                    routes["bm25"] = self.keywords.search(text, allowed, per_route, filters=filters)
        with stage("fusion"):
            fused = reciprocal_rank_fusion(routes, k=self.rrf_k)
        limits: dict[str, object] = {
            "top_k": k,
            "candidates_per_route": per_route,
            "route_counts": {name: len(r) for name, r in sorted(routes.items())},
            "fused_candidates": len(fused),
            "truncated": len(fused) > k,
        }
        if filters is not None and not filters.is_empty:
            limits["filters"] = filters.as_dict()
        return HybridCandidates(text, tuple(allowed), fused, k, limits)

    def hydrate(
        self, fused: list[FusedCandidate], allowed: set[str], k: int, *, filters: SearchFilters | None = None
    ) -> list[tuple[FusedCandidate, SearchHit]]:
        """Load the best candidates from the authoritative store and recheck each one's ACL class (and the
        filters' source and document date).

        The filter already ran inside both searches; this recheck catches an index that is behind the
        store (a document deleted or re-permissioned a moment ago) before anything reaches the caller.
        Candidates are loaded a slice at a time, so a normal query costs two round trips, not one per
        candidate.
        """
        out: list[tuple[FusedCandidate, SearchHit]] = []
        step = max(k, 20)
        for start in range(0, len(fused), step):
            window = fused[start : start + step]
            chunks = self.documents.get_chunks([c.chunk_id for c in window])
            docs = self.documents.get_documents(sorted({c.doc_id for c in chunks.values()}))
            for candidate in window:
                chunk = chunks.get(candidate.chunk_id)
                doc = docs.get(chunk.doc_id) if chunk else None
                if chunk is None or doc is None or chunk.acl_class_id not in allowed or doc.acl_class_id not in allowed:
                    continue
                if filters is not None and not filters.admits(doc.source, chunk.doc_time):
                    continue
                hit = SearchHit(
                    chunk_id=chunk.chunk_id,
                    doc_id=chunk.doc_id,
                    title=doc.title,
                    uri=doc.uri,
                    source=doc.source,
                    breadcrumb=chunk.breadcrumb,
                    start_byte=chunk.start_byte,
                    end_byte=chunk.end_byte,
                    text=chunk.text,
                    score=0.0,
                    doc_time=chunk.doc_time,
                    locator=chunk_locator(doc.media_type, chunk.breadcrumb, chunk.text),
                    version=doc.version,
                )
                out.append((candidate, hit))
                if len(out) == k:
                    return out
        return out
