"""A trace's body from what a search or an answer returned: ids, hashes, ranks, scores, counts and timings.

What goes in is only what the caller was shown or what was computed under the caller's ACL filter: the
hits and their per-route ranks (never a route candidate that the final ACL recheck removed: those are
only counted), the entities linked and the graph walk (both run on the caller's readable classes), the
graph lines that entered the context (by kind, marks, evidence chunk ids and a hash of the line), the
citations (chunk id and byte span) and the answer's outcome. Texts are never stored: not the chunks, not
titles, quotes, entity names or graph lines, and the query only as its SHA-256 (the caller knows the
query; a stored copy could name a deleted document's content). A document's deletion therefore leaves
nothing of it in a trace but chunk ids, which are hashes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgrag_core.acl import Caller
from kgrag_core.answering.model import RemovedSentence
from kgrag_core.graph_retrieval.searcher import GraphSearchResponse
from kgrag_core.search import SearchHit, SearchResponse


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class TraceVersions:
    """The versions of everything that produced an answer; `fusion` holds the fusion settings in force."""

    embedding_model: str
    extractor: str
    ontology: str | None
    router: str
    fusion: Mapping[str, object] = field(default_factory=dict)
    llm_model: str | None = None
    prompt_sha256: str | None = None
    answerer: str = "extractive"

    def as_dict(self) -> dict[str, object]:
        return {
            "embedding_model": self.embedding_model,
            "extractor": self.extractor,
            "ontology": self.ontology,
            "router": self.router,
            "fusion": dict(self.fusion),
            "llm_model": self.llm_model,
            "prompt_sha256": self.prompt_sha256,
            "answerer": self.answerer,
        }


def caller_scope(caller: Caller) -> dict[str, object]:
    """Who asked, and the access scope the query ran in (the scope key is a hash of the principals)."""
    return {
        "user": caller.user,
        "groups": list(caller.groups),
        "admin": caller.admin,
        "scope_key": caller.scope_key(),
    }


def _category(reason: str | None) -> str | None:
    """The kind of a reason ("timeout", "hub not passed", an error code), without what follows the colon:
    messages may quote names read from documents."""
    if reason is None:
        return None
    return reason.split(":", 1)[0].strip()[:64]


def _candidates(hits: Sequence[SearchHit]) -> dict[str, list[dict[str, object]]]:
    """Per route, the shown hits that route found, by their rank in it."""
    routes: dict[str, list[dict[str, object]]] = {}
    for hit in hits:
        for name, rank in hit.ranks.items():
            routes.setdefault(name, []).append({"chunk_id": hit.chunk_id, "rank": rank})
    return {
        name: sorted(found, key=lambda c: (int(str(c["rank"])), str(c["chunk_id"])))
        for name, found in sorted(routes.items())
    }


def _graph(response: GraphSearchResponse) -> dict[str, object]:
    graph_limits = response.limits.get("graph")
    used = bool(graph_limits.get("used")) if isinstance(graph_limits, Mapping) else False
    reason = graph_limits.get("reason") if isinstance(graph_limits, Mapping) else None
    traversal = response.traversal
    paths = []
    if traversal is not None:
        paths = [
            {
                "relation_id": s.edge.relation_id,
                "subject_id": s.edge.subject.entity_id,
                "relation": s.edge.relation,
                "object_id": s.edge.object.entity_id,
                "depth": s.depth,
                "score": round(s.score, 6),
                "evidence_chunk_ids": list(s.edge.evidence_chunk_ids),
            }
            for s in traversal.steps
        ]
    return {
        "used": used,
        "reason": _category(reason if isinstance(reason, str) else None),
        "degraded": response.degraded,
        "degraded_reason": _category(response.degraded_reason),
        "linked_entities": [
            {
                "mention_sha256": sha256_text(lm.mention.text),
                "entities": [[c.entity.entity.entity_id, round(c.score, 4)] for c in lm.candidates],
            }
            for lm in response.links
        ],
        "seeds": [s.entity_id for s in traversal.seeds] if traversal else [],
        "paths": paths,
        "truncated": sorted({_category(t) or "" for t in traversal.truncated}) if traversal else [],
        "facts": [
            {
                "kind": line.kind,
                "line_sha256": sha256_text(line.text),
                "marks": list(line.marks),
                "chunk_ids": list(line.chunk_ids),
            }
            for line in response.graph_lines
        ],
        # Community or entity summaries join the context in a later layer; their ids will be listed here.
        "summaries": [],
        "context": response.context.as_dict() if response.context else None,
    }


def search_body(
    response: SearchResponse | GraphSearchResponse,
    caller: Caller,
    *,
    request: Mapping[str, object],
    versions: TraceVersions,
    timings_ms: Mapping[str, float],
) -> dict[str, object]:
    """The trace body of a search (also the retrieval part of an ask)."""
    limits = response.limits
    body: dict[str, object] = {
        "caller": caller_scope(caller),
        "request": {"query_sha256": sha256_text(response.query), "query_chars": len(response.query), **request},
        "mode": response.mode,
        "route": response.route.as_dict() if isinstance(response, GraphSearchResponse) else None,
        "candidates": _candidates(response.hits),
        "route_counts": dict(counts) if isinstance(counts := limits.get("route_counts"), Mapping) else {},
        "fused_candidates": limits.get("fused_candidates"),
        "truncated": limits.get("truncated"),
        "results": [
            {"chunk_id": h.chunk_id, "rank": i, "score": round(h.score, 6)} for i, h in enumerate(response.hits, 1)
        ],
        "graph": _graph(response) if isinstance(response, GraphSearchResponse) else None,
        "timings_ms": dict(timings_ms),
        "versions": versions.as_dict(),
    }
    return body


def cached_answer_body(
    question: str,
    caller: Caller,
    *,
    request: Mapping[str, object],
    versions: TraceVersions,
    timings_ms: Mapping[str, float],
) -> dict[str, object]:
    """The trace body of an ask served from the answer cache: no retrieval ran, so only the answer part."""
    text = question.strip()
    return {
        "caller": caller_scope(caller),
        "request": {"query_sha256": sha256_text(text), "query_chars": len(text), **request},
        "mode": None,
        "route": None,
        "candidates": {},
        "route_counts": {},
        "fused_candidates": None,
        "truncated": None,
        "results": [],
        "graph": None,
        "timings_ms": dict(timings_ms),
        "versions": versions.as_dict(),
    }


def answer_part(
    answer: Mapping[str, object], *, cached: bool, removed: Sequence[RemovedSentence] | None
) -> dict[str, object]:
    """What the answerer did, from the answer the caller got (`Answer.as_dict()`): its outcome, the evidence
    it could use, what it cited (chunk and byte span, never the quote) and the sentences it removed (None
    for a cached answer: they were recorded in the trace of the answer that filled the cache)."""
    citations = answer.get("citations")
    sentences = answer.get("sentences")
    evidence = answer.get("evidence_chunk_ids")
    return {
        "mode": answer.get("mode"),
        "answered": answer.get("answered"),
        "confidence": answer.get("confidence"),
        "error_code": answer.get("error_code"),
        "cached": cached,
        "evidence_chunk_ids": list(evidence) if isinstance(evidence, list) else [],
        "citations": [
            {"id": c.get("id"), "chunk_id": c.get("chunk_id"), "span": c.get("span")}
            for c in (citations if isinstance(citations, list) else [])
            if isinstance(c, Mapping)
        ],
        "sentences": len(sentences) if isinstance(sentences, list) else 0,
        "removed_sentences": None if removed is None else [r.as_dict() for r in removed],
        "fallback": answer.get("fallback"),  # {reason} when the LLM's answer gave way to the extractive one
        "facts": _facts_used(answer.get("facts")),
        "conflicts": _conflicts_used(answer.get("conflicts"), answer.get("facts")),
    }


def _mappings(items: object) -> list[Mapping[str, Any]]:
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _facts_used(facts: object) -> list[dict[str, object]]:
    """The graph facts the answer stated, by their claim or relation id (stable across answers), the answer's
    own id for them, status and evidence chunks (their values are text: not here)."""
    return [
        {
            "id": f.get("source_id"),
            "answer_id": f.get("id"),
            "kind": f.get("kind"),
            "status": f.get("status"),
            "evidence_chunk_ids": list(f.get("evidence_chunk_ids") or []),
        }
        for f in _mappings(facts)
    ]


def _conflicts_used(conflicts: object, facts: object) -> list[dict[str, object]]:
    """The conflicts the answer surfaced: what they are about and each side's value by hash, with the facts (by
    claim or relation id) and chunks behind each side."""
    stable = {f.get("id"): f.get("source_id") or f.get("id") for f in _mappings(facts)}
    out: list[dict[str, object]] = []
    for c in conflicts if isinstance(conflicts, list) else []:
        if not isinstance(c, Mapping):
            continue
        sides = [v for v in c.get("values") or [] if isinstance(v, Mapping)]
        out.append(
            {
                "kind": c.get("kind"),
                "about_sha256": sha256_text(f"{c.get('subject')}\x1f{c.get('attribute')}"),
                "values": [
                    {
                        "value_sha256": sha256_text(str(v.get("value"))),
                        "fact_ids": [stable.get(i, i) for i in v.get("fact_ids") or []],
                        "chunk_ids": [s.get("chunk_id") for s in v.get("sources") or [] if isinstance(s, Mapping)],
                    }
                    for v in sides
                ],
            }
        )
    return out
