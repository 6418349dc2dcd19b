"""The parts of the ask/search contract (seed 003, section 3) the application adds around retrieval:
filter checks, the strategy that ran, cited document versions, graph paths and linked entities."""

from __future__ import annotations

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.ask_modes import AskMode, ModePlan
from kgrag_core.communities.global_route import GlobalResult
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.filters import SearchFilters
from kgrag_core.graph_retrieval.linking import link_entities
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher, GraphSearchResponse
from kgrag_core.ports import AclStore, DocumentStore
from kgrag_core.search import SearchResponse

MAX_ENTITIES = 20  # linked entities a search lists (include_entities)


def check_filters(filters: SearchFilters | None, caller: Caller, documents: DocumentStore, acls: AclStore) -> None:
    """INVALID_FILTER when a named source has no document the caller may read (a source the caller cannot
    read is reported exactly like one that does not exist, so the answer reveals nothing)."""
    if filters is None or not filters.sources:
        return
    allowed = readable_classes(acls.acl_classes(), caller)
    known = documents.known_sources(filters.sources, allowed)
    unknown = [s for s in filters.sources if s not in known]
    if unknown:
        raise KgragError(
            ErrorCode.INVALID_FILTER,
            f"Unknown source(s) in filters.sources: {', '.join(unknown)}.",
            hint="Name sources of documents you can read (`kgrag documents` lists them with their source).",
        )


def strategy_used(response: SearchResponse | GraphSearchResponse, mode: AskMode, plan: ModePlan) -> dict[str, object]:
    """The route, its confidence and every strategy that ran, in the order they ran."""
    counts = response.limits.get("route_counts")
    ran = [name for name in ("dense", "bm25") if isinstance(counts, dict) and name in counts]
    route: dict[str, object] | None = None
    if isinstance(response, GraphSearchResponse):
        route = {"kind": response.route.kind.value, "confidence": round(response.route.confidence, 3)}
        if response.links:
            ran.append("entity_linking")
        if response.traversal is not None and response.traversal.steps:
            ran.append("graph_expansion")
        if isinstance(counts, dict) and "graph" in counts:
            ran.append("graph")
    return {
        "mode": mode.value,
        "route": route["kind"] if route else "hybrid",
        "confidence": route["confidence"] if route else None,
        "strategies": ran,
        "global_fallback": plan.global_fallback,
    }


def cite_versions(out: dict[str, object], response: SearchResponse | GraphSearchResponse) -> None:
    """Every citation names the version of the document its quote was read from."""
    versions = {h.chunk_id: h.version for h in response.hits}
    citations = out.get("citations")
    if not isinstance(citations, list):
        return
    for citation in citations:
        if isinstance(citation, dict):
            citation.setdefault("version", versions.get(str(citation.get("chunk_id"))))


def graph_evidence(response: SearchResponse | GraphSearchResponse) -> list[dict[str, object]]:
    return [p.as_dict() for p in response.paths] if isinstance(response, GraphSearchResponse) else []


def linked_entities(
    query: str, caller: Caller, searcher: GraphAssistedSearcher | None, acls: AclStore
) -> list[dict[str, object]]:
    """Entities the query names that the caller may see: id, name, type and link score, best first."""
    if searcher is None:
        return []
    allowed = readable_classes(acls.acl_classes(), caller)
    if not allowed:
        return []
    links = link_entities(
        query,
        searcher.graph,
        allowed,
        embedding_search=searcher.embedding_search,
        max_candidates=searcher.settings.max_link_candidates,
    )
    best: dict[str, tuple[float, dict[str, object]]] = {}
    for link in links:
        for candidate in link.candidates:
            ref = candidate.entity.entity
            if ref.entity_id not in best or candidate.score > best[ref.entity_id][0]:
                row = {
                    "entity_id": ref.entity_id,
                    "name": ref.name,
                    "type": ref.type,
                    "score": round(candidate.score, 4),
                }
                best[ref.entity_id] = (candidate.score, row)
    ranked = sorted(best.values(), key=lambda kv: (-kv[0], str(kv[1]["entity_id"])))
    return [row for _, row in ranked[:MAX_ENTITIES]]


def request_part(
    mode: AskMode, filters: SearchFilters | None, max_hops: int | None, include_graph_paths: bool
) -> dict[str, object]:
    """What a trace records of the contract's options (no free text)."""
    return {
        "mode": mode.value,
        "filters": (filters or SearchFilters()).as_dict(),
        "max_hops": max_hops,
        "include_graph_paths": include_graph_paths,
    }


def global_part(out: dict[str, object], found: GlobalResult) -> None:
    """What the GLOBAL route adds to an answer: its themes (points cite the verified answer's citations, by
    chunk and span; a point verification removed is left out), and in `strategy_used` the route and the
    communities it used; `global_fallback` is false since the themes came from communities."""
    cited = out.get("citations")
    ids = {
        (str(c.get("chunk_id")), tuple(c.get("span") or ())): c.get("id")
        for c in (cited if isinstance(cited, list) else [])
        if isinstance(c, dict)
    }
    by_id = {c.id: (c.chunk_id, (c.start_byte, c.end_byte)) for c in found.citations}
    themes: list[dict[str, object]] = []
    for theme in found.themes:
        points = []
        for point in theme.points:
            now = [ids.get(by_id[i]) for i in point.citation_ids]
            if all(n is not None for n in now):
                points.append({"text": point.text, "citations": now})
        if points:
            themes.append({**theme.as_dict(), "points": points})
    out["themes"] = themes
    out["global_fallback"] = False
    strategy = out.get("strategy_used")
    if isinstance(strategy, dict):
        strategy.update(
            route="global",
            strategies=[*strategy.get("strategies", []), "communities"],
            global_fallback=False,
            communities=list(found.communities_used),
            communities_read=found.communities_read,
            skipped=dict(found.skipped),
        )
