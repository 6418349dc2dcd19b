"""Keep a projection of the text graph (Neo4j in distributed mode) equal to PostgreSQL, per document.

PostgreSQL is authoritative (migration 0028). A document's part of the text graph (its passages' mention
edges and the synonym edges its chunks are the evidence of) is re-read from PostgreSQL and replaces what
the projection holds for that document, so replays converge and a late event removes rather than
resurrects: a deleted document has no rows left in PostgreSQL (its chunks' deletion cascades), and
projecting it removes its passages, edges and any node nothing else names.

Trigger: graph.changed, which the extractor announces for a document once its batch is done; the text
graph is built by the same consumer in the same batch (kgrag_runtime.text_graph.with_text_graph), so the
event never precedes the rows it is about. Events without a doc_id are not about one document (a merge):
the text graph has nothing to do for them, and the knowledge projection beside it dead-letters the
malformed ones. A rebuild projects every document either store holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kgrag_core.events import GRAPH_CHANGED
from kgrag_core.handlers.protocol import HandlerResult
from kgrag_core.text_graph.model import MentionKind


@dataclass(frozen=True, slots=True)
class ProjectedMention:
    """A passage-node edge; the passage is its evidence chunk."""

    chunk_id: str
    node_key: str
    acl_class_id: str
    kind: MentionKind
    weight: float


@dataclass(frozen=True, slots=True)
class ProjectedSynonym:
    node_a: str
    node_b: str
    chunk_id: str  # the evidence: the chunk that brought the newer name
    acl_class_id: str
    similarity: float


@dataclass(frozen=True, slots=True)
class TextGraphDocument:
    """Everything of one document in the text graph; `titled`: which of its nodes are some title."""

    doc_id: str
    mentions: tuple[ProjectedMention, ...]
    synonyms: tuple[ProjectedSynonym, ...]
    titled: frozenset[str]


@runtime_checkable
class TextGraphSource(Protocol):
    def text_graph_of(self, doc_id: str) -> TextGraphDocument: ...

    def text_graph_documents(self) -> list[str]:
        """Every document with a mention or synonym edge."""
        ...

    def exclusive(self, name: str) -> AbstractContextManager[None]:
        """Hold the lock `name` while the block runs (read the source, then write the projection)."""
        ...


@runtime_checkable
class TextGraphProjection(Protocol):
    @property
    def namespace(self) -> str: ...

    def replace_text_graph(self, doc: TextGraphDocument) -> None:
        """The document's passages and edges become exactly `doc`'s; nodes left with no edge go."""
        ...

    def text_graph_documents(self) -> list[str]: ...

    def text_graph_of(self, doc_id: str) -> TextGraphDocument:
        """What the projection holds for the document, in the source's shape and order."""
        ...


def project_text_graph(doc_id: str, source: TextGraphSource, target: TextGraphProjection) -> TextGraphDocument:
    with source.exclusive(f"kgrag-text-graph-projection:{target.namespace}:{doc_id}"):
        doc = source.text_graph_of(doc_id)
        target.replace_text_graph(doc)
    return doc


def rebuild_text_graph(source: TextGraphSource, target: TextGraphProjection) -> int:
    """Project every document either side holds (the projection's leftovers are removed); returns how many."""
    doc_ids = sorted(set(source.text_graph_documents()) | set(target.text_graph_documents()))
    for doc_id in doc_ids:
        project_text_graph(doc_id, source, target)
    return len(doc_ids)


@dataclass(slots=True)
class TextGraphProjectionHandler:
    source: TextGraphSource
    target: TextGraphProjection
    name: str = "text-graph-projection"
    topics: tuple[str, ...] = (GRAPH_CHANGED,)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        doc_ids = [p["doc_id"] for _, p in batch if isinstance(p.get("doc_id"), str) and p["doc_id"]]
        for doc_id in dict.fromkeys(doc_ids):  # once per document per batch
            project_text_graph(str(doc_id), self.source, self.target)
        return HandlerResult()
