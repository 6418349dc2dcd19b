"""Ports: the small interfaces the core talks to, split by capability.

Adapters live in `kgrag_adapters`; every adapter of a port passes the port's contract suite in
`kgrag_testing.contracts`. Nothing here performs I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk, StoredDocument
from kgrag_core.extraction.model import ChunkExtraction, ExtractionKey, Quarantined
from kgrag_core.extraction.records import ChunkExtractionState, ClaimRecord, ExtractionRun, MinHashEntry, RerunScope
from kgrag_core.filters import SearchFilters
from kgrag_core.ingest import DeletionRecord, IngestOutcome
from kgrag_core.search import KeywordDoc, RouteHit, VectorPoint
from kgrag_core.tracing.curation import WeakEdge
from kgrag_core.tracing.model import Feedback, FeedbackStatus, Trace

# --- authoritative store (PostgreSQL) -------------------------------------------------------------


@runtime_checkable
class DocumentStore(Protocol):
    """Documents, ACL classes and chunks: the truth the projections are rebuilt from."""

    def get_document(self, doc_id: str) -> StoredDocument | None: ...

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        """Documents by ID, in any status; missing IDs are absent from the result."""
        ...

    def list_documents(self, *, include_deleted: bool = False) -> list[StoredDocument]: ...

    def known_sources(self, sources: Sequence[str], acl_class_ids: Sequence[str]) -> set[str]:
        """Which of `sources` name at least one active document of these ACL classes: a filter naming any
        other source is refused (a source the caller cannot read is as unknown as one that does not exist)."""
        ...

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        """Chunks of an active document, ordered by seq."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by ID (only those of active documents)."""
        ...

    def commit_document(
        self,
        doc: StoredDocument,
        acl: AclClass,
        chunks: Sequence[Chunk],
        *,
        embedding_keys: Mapping[str, str] | None = None,
    ) -> None:
        """In one transaction: upsert the ACL class and the document, replace the document's chunk set.

        `embedding_keys` (chunk ID -> the EmbeddingCache key of its vector) lets entity resolution read a
        chunk's vector without calling the model; a chunk left out keeps the key it had."""
        ...

    def commit_documents(
        self, items: Sequence[tuple[StoredDocument, AclClass, Sequence[Chunk], Mapping[str, str]]]
    ) -> None:
        """`commit_document` for each (document, ACL class, chunks, embedding keys), all in one transaction:
        one commit for a batch instead of one per document."""
        ...

    def update_acl(self, doc_id: str, acl: AclClass) -> bool:
        """In one transaction: upsert the ACL class, re-point the active document and all its chunks at
        it. False when there is no active document."""
        ...

    def mark_deleted(self, doc_id: str, record: DeletionRecord) -> None:
        """In one transaction: drop the chunks, mark the document DELETED, write the deletion audit row."""
        ...

    def deletion_records(self, doc_id: str) -> list[DeletionRecord]: ...


@runtime_checkable
class AclStore(Protocol):
    def acl_classes(self) -> list[AclClass]: ...


@runtime_checkable
class IngestLog(Protocol):
    def record_outcomes(self, outcomes: Sequence[IngestOutcome]) -> None: ...

    def recent_outcomes(self, limit: int = 100) -> list[IngestOutcome]: ...

    def outcomes_for(self, doc_id: str, limit: int = 20) -> list[IngestOutcome]:
        """One document's latest `limit` outcomes, newest first."""
        ...

    def recent_errors(self, limit: int = 20) -> list[IngestOutcome]:
        """The latest `limit` outcomes that carry an error code, newest first (`StoreStats.ingest_errors`
        counts them all)."""
        ...


@runtime_checkable
class EmbeddingCache(Protocol):
    """Vectors by (model, chunk content hash): an unchanged chunk is never embedded twice."""

    def get_vectors(self, model_id: str, hashes: Sequence[str]) -> dict[str, tuple[float, ...]]: ...

    def put_vectors(self, model_id: str, vectors: Mapping[str, Sequence[float]]) -> None: ...

    def delete_vectors(self, model_id: str, hashes: Sequence[str]) -> int:
        """Forget these vectors (a deleted document's); return how many were removed."""
        ...


@dataclass(frozen=True, slots=True)
class StoreStats:
    documents: int
    deleted_documents: int
    chunks: int
    acl_classes: int
    cached_vectors: int
    ingest_errors: int


@runtime_checkable
class StatsSource(Protocol):
    def stats(self) -> StoreStats: ...


# --- projections ------------------------------------------------------------------------------------


@runtime_checkable
class VectorIndex(Protocol):
    """Dense vectors of chunks. `acl_class_ids` and `filters` (source, document date: the points' `source`
    and `doc_time` payload) filter inside the search, never after it."""

    def upsert(self, points: Sequence[VectorPoint]) -> None: ...

    def delete(self, chunk_ids: Sequence[str]) -> None: ...

    def search(
        self,
        vector: Sequence[float],
        acl_class_ids: Sequence[str],
        limit: int,
        *,
        filters: SearchFilters | None = None,
    ) -> list[RouteHit]: ...

    def count(self) -> int: ...

    def ids_for_doc(self, doc_id: str) -> list[str]: ...


@runtime_checkable
class KeywordIndex(Protocol):
    """BM25 over chunk text, title and breadcrumb. `acl_class_ids` and `filters` (source, document date)
    filter inside the search: they restrict the candidates without changing scores."""

    def upsert(self, docs: Sequence[KeywordDoc]) -> None: ...

    def delete(self, chunk_ids: Sequence[str]) -> None: ...

    def search(
        self, query: str, acl_class_ids: Sequence[str], limit: int, *, filters: SearchFilters | None = None
    ) -> list[RouteHit]: ...

    def count(self) -> int: ...

    def ids_for_doc(self, doc_id: str) -> list[str]: ...


@runtime_checkable
class LexicalGraph(Protocol):
    """The lexical graph projection: (Document)<-[:FROM_DOCUMENT]-(Chunk)-[:NEXT_CHUNK]->(Chunk).

    Entities join it in the knowledge-graph work; PostgreSQL stays the truth it is rebuilt from.
    Every write carries the run ID that produced it, so a projection run can be audited.
    """

    def upsert_document(self, doc: StoredDocument, chunks: Sequence[Chunk], run_id: str) -> None:
        """Make the graph hold exactly these chunks for the document (stale chunks are removed)."""
        ...

    def delete_document(self, doc_id: str) -> int:
        """Remove the document and its chunks; return how many chunk nodes were removed."""
        ...

    def chunk_ids(self, doc_id: str) -> list[str]:
        """Chunk IDs of the document in NEXT_CHUNK order."""
        ...

    def counts(self) -> dict[str, int]:
        """Node and relationship counts: documents, chunks, next_chunk, from_document."""
        ...


# --- blobs, cache ----------------------------------------------------------------------------------


@runtime_checkable
class ObjectStore(Protocol):
    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes | None: ...

    def delete_prefix(self, prefix: str) -> list[str]:
        """Delete every object under the prefix; return the deleted keys, sorted."""
        ...

    def list_keys(self, prefix: str) -> list[str]: ...


@runtime_checkable
class Cache(Protocol):
    """A result cache. Keys must include the caller's ACL scope; `invalidate_all` runs on any change."""

    def get(self, key: str) -> bytes | None: ...

    def set(self, key: str, value: bytes, ttl_seconds: int) -> None: ...

    def generation(self) -> int:
        """A counter that moves on every invalidation; callers put it in their keys."""
        ...

    def invalidate_all(self) -> None: ...


# --- models ------------------------------------------------------------------------------------------


@runtime_checkable
class Embedder(Protocol):
    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]: ...

    def embed_query(self, text: str) -> tuple[float, ...]: ...


@runtime_checkable
class TokenCounter(Protocol):
    def count_tokens(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: str  # system | user | assistant
    content: str


@runtime_checkable
class ChatModel(Protocol):
    """An OpenAI-compatible chat endpoint, or a scripted fake in tests (never a real model in CI)."""

    @property
    def model_id(self) -> str: ...

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None) -> str: ...


@runtime_checkable
class StreamingChatModel(ChatModel, Protocol):
    """A chat model that can also hand its reply over piece by piece, as the endpoint produces it.

    Closing the returned iterator stops the generation (the adapter closes its connection)."""

    def stream(
        self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None
    ) -> Iterator[str]: ...


# --- bus -----------------------------------------------------------------------------------------------

EventHandler = Callable[[Sequence[Mapping[str, object]]], Sequence[tuple[str, str, Mapping[str, object]]]]


@runtime_checkable
class EventBus(Protocol):
    """Topics partitioned by key (the document ID), so one document's events stay in order."""

    def publish(self, topic: str, key: str, event: Mapping[str, object]) -> None: ...

    def publish_many(self, topic: str, events: Iterable[tuple[str, Mapping[str, object]]]) -> None: ...


# --- extraction ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecognizedMention:
    """A typed span found by NER or the entity ruler; offsets are character offsets into the text."""

    text: str
    label: str  # an ontology entity type (the recognizer maps its own labels) or "DATE"
    start: int
    end: int
    sentence_start: int
    sentence_end: int
    source: str  # "ner" (statistical model) | "ruler" (known alias)


@runtime_checkable
class MentionRecognizer(Protocol):
    """Tier 2's NER: a statistical model plus an entity ruler fed with the aliases the graph already knows."""

    @property
    def version(self) -> str: ...

    def recognize(
        self, texts: Sequence[str], known_names: Mapping[str, str] | None = None
    ) -> list[list[RecognizedMention]]:
        """Mentions per text, the ruler knowing exactly `known_names` (surface form -> ontology entity type;
        None: no names). Names and texts travel together, so two callers with different names (two access
        scopes) can never run with each other's ruler."""
        ...


@runtime_checkable
class ExtractionStore(Protocol):
    """Extraction results and the facts they support, authoritative in PostgreSQL.

    Facts (entities, relations, claims) are written with one evidence row per supporting chunk, carrying
    that chunk's ACL class; when a chunk goes (its document changed or was deleted) its evidence goes with
    it, and a fact left without evidence is removed in the same transaction.
    """

    # cache: (content hash, extractor version, ontology version) -> validated result
    def cached(self, keys: Sequence[ExtractionKey]) -> dict[ExtractionKey, ChunkExtraction]: ...

    def save(self, results: Sequence[ChunkExtraction]) -> None:
        """Upsert each result into the cache and the chunk's extraction row, and replace that chunk's facts
        and evidence with the result's items (idempotent: the same results twice leave one copy)."""
        ...

    def states(self, chunk_ids: Sequence[str]) -> dict[str, ChunkExtractionState]: ...

    def quarantine(self, items: Sequence[Quarantined]) -> None: ...

    def orphaned_duplicates(self, limit: int = 256) -> list[str]:
        """IDs of live chunks recorded as duplicates of a chunk that no longer exists (their representative
        was deleted), oldest first: they are extracted again so that no copy depends on a deleted one."""
        ...

    def purge_content(self, content_hashes: Sequence[str] | None = None) -> int:
        """Forget cached extractions of texts no live chunk has any more (all such texts when None)."""
        ...

    def quarantined(self, limit: int = 100) -> list[Quarantined]: ...

    # tier 0 near-duplicates: MinHash signatures and LSH band keys of chunk texts
    def put_minhashes(self, entries: Sequence[tuple[MinHashEntry, Sequence[str]]]) -> None: ...

    def minhash_candidates(
        self, band_keys: Sequence[str], exclude_doc_id: str | None = None, acl_class_id: str | None = None
    ) -> list[MinHashEntry]:
        """Chunks sharing at least one band key, oldest first (the oldest copy is the representative); only
        chunks of `acl_class_id` when given."""
        ...

    def chunks_with_hash(self, content_hashes: Sequence[str], acl_class_id: str | None = None) -> dict[str, list[str]]:
        """content hash -> IDs of live chunks with that text, oldest first (of that ACL class when given)."""
        ...

    # what tier 2's entity ruler should recognise
    def known_names(self, limit: int = 50_000, acl_class_id: str | None = None) -> dict[str, str]:
        """Surface form -> entity type, most used first. With `acl_class_id`: only what chunks of that class
        named (the scope a chunk of that class is extracted in); None: everything (an operator's view)."""
        ...

    # reading facts back
    def claims(
        self, *, entity: str | None = None, attribute: str | None = None, acl_class_ids: Sequence[str] | None = None
    ) -> list[ClaimRecord]:
        """Claims by entity name (case-insensitive) and attribute; None for acl_class_ids means admin (all)."""
        ...

    def fact_counts(self) -> dict[str, int]: ...

    # ontology versions
    def save_ontology(self, version: str, body: Mapping[str, object], *, activate: bool = True) -> None: ...

    def active_ontology(self) -> Mapping[str, object] | None: ...

    def ontology_versions(self) -> list[str]: ...

    # re-extraction runs
    def save_run(self, run: ExtractionRun) -> None: ...

    def get_run(self, run_id: str) -> ExtractionRun | None: ...

    def runs(self, limit: int = 50) -> list[ExtractionRun]:
        """Re-extraction runs, newest first."""
        ...

    def chunks_in_scope(self, scope: RerunScope) -> list[Chunk]:
        """Live chunks the scope selects, in a stable order (doc_id, seq)."""
        ...


# --- traces, feedback, curation ------------------------------------------------------------------------


@runtime_checkable
class TraceStore(Protocol):
    """Query traces (ids and hashes only: kgrag_core.tracing.build) and the feedback on them."""

    def save_traces(self, traces: Sequence[Trace]) -> None:
        """Insert the traces in one statement; a trace id saved twice keeps the first."""
        ...

    def get_trace(self, trace_id: str) -> Trace | None: ...

    def purge_traces(self, older_than: datetime) -> int:
        """Delete traces created before `older_than`, except those with open feedback; return how many."""
        ...

    def add_feedback(self, feedback: Feedback) -> None:
        """Store feedback on a stored trace (TRACE_NOT_FOUND when the trace is gone)."""
        ...

    def list_feedback(self, *, status: FeedbackStatus | None = None, limit: int = 100) -> list[Feedback]:
        """Feedback, newest first; only `status` when given."""
        ...

    def resolve_feedback(self, feedback_id: str, *, by: str, resolution: str, at: datetime) -> Feedback | None:
        """Mark feedback resolved (again: the latest resolution wins); None when there is no such feedback."""
        ...


@runtime_checkable
class CurationSource(Protocol):
    """What the curation queue reads from the graph besides the review queue (admin views)."""

    def conflicted_entities(self, limit: int) -> list[str]:
        """Entities with claims that may conflict (same attribute and day written, different values), at
        most `limit`, in id order; the claim timeline decides which really do."""
        ...

    def weak_edges(self, below: float, limit: int) -> list[WeakEdge]:
        """Relations whose best evidence confidence is below `below`, weakest first (then by id)."""
        ...
