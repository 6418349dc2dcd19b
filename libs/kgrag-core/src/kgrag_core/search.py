"""Search results and the shapes the retrieval routes return."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kgrag_core.chunking.locators import Locator


@dataclass(frozen=True, slots=True)
class RouteHit:
    """One route's candidate: a chunk ID, the route's raw score and 1-based rank."""

    chunk_id: str
    score: float
    rank: int


@dataclass(frozen=True, slots=True)
class VectorPoint:
    chunk_id: str
    vector: tuple[float, ...]
    doc_id: str
    acl_class_id: str
    content_hash: str
    source: str
    doc_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class KeywordDoc:
    chunk_id: str
    doc_id: str
    acl_class_id: str
    title: str
    breadcrumb: str
    text: str
    source: str
    doc_time: datetime | None = None  # the document's date, filtered on by `SearchFilters`


@dataclass(frozen=True, slots=True)
class SearchHit:
    chunk_id: str
    doc_id: str
    title: str
    uri: str
    source: str
    breadcrumb: tuple[str, ...]
    start_byte: int
    end_byte: int
    text: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    doc_time: datetime | None = None
    # The page(s), or speaker and time, where the chunk starts (paged and timed formats only).
    locator: Locator | None = None
    version: int | None = None  # the document version the chunk was read from (citations carry it)

    def as_dict(self) -> dict[str, object]:
        located = self.locator.as_dict() if self.locator is not None else {}
        return located | {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "uri": self.uri,
            "source": self.source,
            "section_path": " > ".join(self.breadcrumb),
            "span": [self.start_byte, self.end_byte],
            "text": self.text,
            "score": round(self.score, 6),
            "ranks": dict(sorted(self.ranks.items())),
            "doc_time": self.doc_time.isoformat() if self.doc_time else None,
            "version": self.version,
        }


@dataclass(frozen=True, slots=True)
class SearchResponse:
    query: str
    hits: tuple[SearchHit, ...]
    mode: str
    limits: dict[str, object] = field(default_factory=dict)
    trace_id: str | None = None  # set by the application when it records the search (GET /v1/traces/{id})
    # Linked entities (entity_id, name, type, score), only when asked for (include_entities)
    entities: tuple[dict[str, object], ...] | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "query": self.query,
            "mode": self.mode,
            "hits": [h.as_dict() for h in self.hits],
            "limits": self.limits,
            "trace_id": self.trace_id,
        }
        if self.entities is not None:
            out["entities"] = list(self.entities)
        return out
