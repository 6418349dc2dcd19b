"""The chunk-indexer use case: validate → chunk → hash-diff → embed → project → commit.

Order matters for crash safety. Projections (vector and keyword indexes, object store) are written first
with idempotent upserts keyed by deterministic IDs; the authoritative PostgreSQL commit comes last. A
crash in between leaves the store saying "not yet indexed", so a replay redoes the work and changes
nothing that was already right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kgrag_core.acl import AclClass
from kgrag_core.chunking import chunk_document, estimate_tokens
from kgrag_core.chunking.locators import annotate_spans
from kgrag_core.documents import Chunk, DocumentStatus, SourceDocument, StoredDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ids import chunk_id_for, content_hash
from kgrag_core.ingest import DeletionRecord, IngestOutcome, IngestStatus, no_active_document
from kgrag_core.ports import (
    Cache,
    DocumentStore,
    Embedder,
    EmbeddingCache,
    ExtractionStore,
    KeywordIndex,
    ObjectStore,
    VectorIndex,
)
from kgrag_core.search import KeywordDoc, VectorPoint
from kgrag_core.shredding import ContentCipher, Purgeable, PurgeStatus, StorePurge
from kgrag_core.validation import decode_body, validate_label


@dataclass(frozen=True, slots=True)
class IndexerSettings:
    max_document_bytes: int = 5_000_000
    chunk_max_tokens: int = 200
    chunk_overlap_tokens: int = 24
    embed_batch_size: int = 64


@dataclass(frozen=True, slots=True)
class _Prepared:
    source: SourceDocument
    stored: StoredDocument
    chunks: tuple[Chunk, ...]
    previous_chunk_ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class StagedIndex:
    """A batch validated, chunked and embedded, not yet written (`DocumentIndexer.stage_batch`)."""

    size: int
    outcomes: dict[int, IngestOutcome]  # by position: documents that need no write (rejected, unchanged)
    prepared: tuple[tuple[int, _Prepared], ...]
    vectors: dict[str, tuple[float, ...]]
    embedded: frozenset[str]

    def written(self, doc_id: str) -> tuple[int, list[str]] | None:
        """The version and chunk IDs `write_staged` commits for this document (None: it writes none)."""
        for _, item in self.prepared:
            if item.stored.doc_id == doc_id:
                return item.stored.version, [c.chunk_id for c in item.chunks]
        return None


@dataclass(slots=True)
class DocumentIndexer:
    documents: DocumentStore
    vectors: VectorIndex
    keywords: KeywordIndex
    objects: ObjectStore
    embedder: Embedder
    embedding_cache: EmbeddingCache
    cache: Cache
    settings: IndexerSettings = field(default_factory=IndexerSettings)
    count_tokens: Callable[[str], int] = estimate_tokens
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # Where extraction results are cached: a compliance deletion purges the deleted texts' entries too.
    extraction_store: ExtractionStore | None = None
    # Seals the raw body before it reaches the object store (ADR 0008); None stores it as it came.
    cipher: ContentCipher | None = None
    # Runs a batch's independent projection writes (object store, vector index, keyword index); the
    # distributed runtime runs them concurrently, each waiting on its own server. Default: in turn.
    run_all: Callable[[Sequence[Callable[[], None]]], None] = field(default_factory=lambda: in_turn)

    def index_batch(self, docs: Sequence[SourceDocument]) -> list[IngestOutcome]:
        """Index a batch; one bad document gets its error code and the rest go on (invariant 8)."""
        return self.write_staged(self.stage_batch(docs))

    def stage_batch(self, docs: Sequence[SourceDocument]) -> StagedIndex:
        """The first half of `index_batch`: validate, chunk, hash-diff and embed, writing nothing but the
        embedding cache. A runner may stage the next batch while `write_staged` writes this one, as long as
        the two batches name different documents (staging reads each document's stored version)."""
        outcomes: dict[int, IngestOutcome] = {}
        prepared: list[tuple[int, _Prepared]] = []
        last_position = {doc.doc_id: position for position, doc in enumerate(docs)}
        for position, doc in enumerate(docs):
            if last_position[doc.doc_id] != position:
                # A later event for the same document in this batch wins; indexing both would race.
                outcomes[position] = IngestOutcome(
                    doc.doc_id,
                    IngestStatus.UNCHANGED,
                    source=doc.source,
                    uri=doc.uri,
                    message="superseded by a later event in the batch",
                )
                continue
            try:
                result = self._prepare(doc)
            except KgragError as err:
                outcomes[position] = _rejected(doc, err)
                continue
            if isinstance(result, IngestOutcome):
                outcomes[position] = result
            else:
                prepared.append((position, result))
        vectors, embedded = self._vectors_for([p for _, p in prepared])
        return StagedIndex(len(docs), outcomes, tuple(prepared), vectors, frozenset(embedded))

    def write_staged(self, staged: StagedIndex) -> list[IngestOutcome]:
        """The second half of `index_batch`: the projections, then the PostgreSQL commit that makes each
        document ACTIVE (searchable) last."""
        outcomes = dict(staged.outcomes)
        prepared = staged.prepared
        if prepared:
            self._project([p for _, p in prepared], staged.vectors)
        if prepared:
            self.documents.commit_documents(
                [
                    (
                        item.stored,
                        item.source.acl,
                        item.chunks,
                        {c.chunk_id: _embedding_key(_embedding_text(item.source.title, c)) for c in item.chunks},
                    )
                    for _, item in prepared
                ]
            )
        for position, item in prepared:
            outcomes[position] = _indexed(item, staged.embedded)
        if prepared:
            self.cache.invalidate_all()
        return [outcomes[i] for i in range(staged.size)]

    def delete(self, doc_id: str, *, observed_at: datetime | None = None) -> IngestOutcome:
        existing = self.documents.get_document(doc_id)
        if existing is not None and observed_at and existing.observed_at and existing.observed_at > observed_at:
            return IngestOutcome(
                doc_id,
                IngestStatus.UNCHANGED,
                source=existing.source,
                uri=existing.uri,
                message="skipped: a newer version arrived after this deletion was requested",
            )
        if existing is None or existing.status is DocumentStatus.DELETED:
            return no_active_document(doc_id)
        # Take IDs from both the store and the indexes, so a half-finished earlier write leaves nothing.
        stored_chunks = self.documents.chunks_of(doc_id)
        chunk_ids = sorted(
            {c.chunk_id for c in stored_chunks}
            | set(self.vectors.ids_for_doc(doc_id))
            | set(self.keywords.ids_for_doc(doc_id))
        )
        self.vectors.delete(chunk_ids)
        self.keywords.delete(chunk_ids)
        # What must stay plaintext to be searchable (BM25 terms, vectors) is purged physically, not only
        # marked deleted; the record says per store what happened and when (ADR 0008).
        purges = [
            self._purge("vector_index", self.vectors),
            self._purge("keyword_index", self.keywords, rewrite_without=doc_id),
        ]
        object_keys = self.objects.delete_prefix(_object_prefix(doc_id))
        purges.append(
            StorePurge(
                "object_store",
                PurgeStatus.SHREDDED if self.cipher is not None else PurgeStatus.DELETED,
                self.clock(),
                f"{len(object_keys)} object(s) deleted" + ("; sealed under the document's key" if self.cipher else ""),
            )
        )
        # The cached vectors are derived from the document's text too; a compliance deletion takes them.
        removed = self.embedding_cache.delete_vectors(
            self.embedder.model_id, sorted({_embedding_key(_embedding_text(existing.title, c)) for c in stored_chunks})
        )
        purges.append(StorePurge("embedding_cache", PurgeStatus.DELETED, self.clock(), f"{removed} vector(s)"))
        self.cache.invalidate_all()
        purges.append(StorePurge("result_cache", PurgeStatus.DELETED, self.clock(), "every cached answer invalidated"))
        record = DeletionRecord(
            doc_id=doc_id,
            chunk_ids=tuple(chunk_ids),
            object_keys=tuple(object_keys),
            stores=("postgres", "vector_index", "keyword_index", "object_store", "embedding_cache", "result_cache")
            + (("knowledge_graph", "extraction_cache") if self.extraction_store is not None else ()),
            at=self.clock(),
            purges=tuple(purges),
        )
        # Marking the document deleted removes its chunks, and with them (same transaction) their evidence
        # and every fact left without evidence, and destroys the document's data key; then no live chunk
        # has these texts, so their cached extractions (which quote them) can go.
        self.documents.mark_deleted(doc_id, record)
        if self.extraction_store is not None:
            self.extraction_store.purge_content(sorted({c.content_hash for c in stored_chunks}))
        return IngestOutcome(
            doc_id,
            IngestStatus.DELETED,
            source=existing.source,
            uri=existing.uri,
            chunks_removed=len(chunk_ids),
            message="removed from every store",
        )

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome:
        """Move a document to a new ACL class, failing closed.

        PostgreSQL changes first: from that moment the final recheck of every search uses the new class,
        so a reader who lost access sees nothing even while the projections still carry the old one,
        and a reader who gained access waits until the projections are rewritten below.
        """
        if not self.documents.update_acl(doc_id, acl):
            return no_active_document(doc_id)
        self.cache.invalidate_all()
        count = self.reproject([doc_id])
        self.cache.invalidate_all()
        return IngestOutcome(
            doc_id, IngestStatus.ACL_UPDATED, chunks_total=count, message=f"now readable by {', '.join(acl.principals)}"
        )

    def reproject(self, doc_ids: Sequence[str], *, vectors: bool = True, keywords: bool = True) -> int:
        """Rewrite the vector and keyword projections of these documents from PostgreSQL alone.

        Vectors come from the embedding cache, so a rebuild calls the model only for text it never saw.
        Returns the number of chunks written.
        """
        docs = self.documents.get_documents(list(doc_ids))
        points: list[VectorPoint] = []
        keyword_docs: list[KeywordDoc] = []
        texts: dict[str, str] = {}
        chunks_by_doc = {d: self.documents.chunks_of(d) for d in sorted(docs)}
        for doc_id, chunks in chunks_by_doc.items():
            for c in chunks:
                text = _embedding_text(docs[doc_id].title, c)
                texts[_embedding_key(text)] = text
        found = self._vectors_for_texts(texts)[0] if vectors else {}
        for doc_id, chunks in chunks_by_doc.items():
            doc = docs[doc_id]
            for c in chunks:
                if vectors:
                    key = _embedding_key(_embedding_text(doc.title, c))
                    points.append(
                        VectorPoint(
                            c.chunk_id, found[key], c.doc_id, c.acl_class_id, c.content_hash, doc.source, c.doc_time
                        )
                    )
                if keywords:
                    keyword_docs.append(
                        KeywordDoc(
                            c.chunk_id,
                            c.doc_id,
                            c.acl_class_id,
                            doc.title,
                            c.section_path,
                            c.text,
                            doc.source,
                            c.doc_time,
                        )
                    )
        if points:
            self.vectors.upsert(points)
        if keyword_docs:
            self.keywords.upsert(keyword_docs)
        return sum(len(chunks) for chunks in chunks_by_doc.values())

    # --- steps ---------------------------------------------------------------------------------------

    def _prepare(self, doc: SourceDocument) -> _Prepared | IngestOutcome:
        for field_name, value in (("title", doc.title), ("uri", doc.uri), ("source", doc.source)):
            validate_label(value, field=field_name)
        text = decode_body(doc.body, max_bytes=self.settings.max_document_bytes)
        body_hash = content_hash(doc.body)
        existing = self.documents.get_document(doc.doc_id)
        if _older_than_store(doc.observed_at, existing):
            return IngestOutcome(
                doc.doc_id,
                IngestStatus.UNCHANGED,
                source=doc.source,
                uri=doc.uri,
                message="skipped: the store already reflects a later change or deletion",
            )
        if (
            existing is not None
            and existing.status is DocumentStatus.ACTIVE
            and existing.content_hash == body_hash
            and existing.acl_class_id == doc.acl.acl_class_id
            and existing.title == doc.title
            and existing.uri == doc.uri
            and existing.modified_at == doc.modified_at
        ):
            return IngestOutcome(
                doc.doc_id,
                IngestStatus.UNCHANGED,
                source=doc.source,
                uri=doc.uri,
                chunks_total=len(self.documents.chunks_of(doc.doc_id)),
            )
        previous = frozenset(c.chunk_id for c in self.documents.chunks_of(doc.doc_id))
        version = 1 if existing is None else existing.version + 1
        body = doc.body
        chunk_list = chunks_of_document(
            doc,
            text,
            max_tokens=self.settings.chunk_max_tokens,
            overlap_tokens=self.settings.chunk_overlap_tokens,
            count_tokens=self.count_tokens,
        )
        chunks = tuple(chunk_list)
        if not chunks:
            raise KgragError(ErrorCode.EMPTY_DOCUMENT, "The document has no text to index after front matter.")
        stored = StoredDocument(
            doc_id=doc.doc_id,
            source=doc.source,
            uri=doc.uri,
            title=doc.title,
            version=version,
            content_hash=body_hash,
            acl_class_id=doc.acl.acl_class_id,
            modified_at=doc.modified_at,
            status=DocumentStatus.ACTIVE,
            media_type=doc.media_type,
            byte_length=len(body),
            observed_at=doc.observed_at,
        )
        return _Prepared(doc, stored, chunks, previous)

    def _vectors_for(self, items: Sequence[_Prepared]) -> tuple[dict[str, tuple[float, ...]], set[str]]:
        wanted: dict[str, str] = {}
        for item in items:
            for chunk in item.chunks:
                text = _embedding_text(item.source.title, chunk)
                wanted.setdefault(_embedding_key(text), text)
        return self._vectors_for_texts(wanted)

    def _vectors_for_texts(self, wanted: dict[str, str]) -> tuple[dict[str, tuple[float, ...]], set[str]]:
        """Vectors keyed by embedding-text hash: the cache first, the model only for text it never saw."""
        model = self.embedder.model_id
        found = dict(self.embedding_cache.get_vectors(model, sorted(wanted)))
        missing = sorted(h for h in wanted if h not in found)
        size = self.settings.embed_batch_size
        for start in range(0, len(missing), size):
            batch = missing[start : start + size]
            fresh = self.embedder.embed_documents([wanted[h] for h in batch])
            new = dict(zip(batch, fresh, strict=True))
            self.embedding_cache.put_vectors(model, new)
            found.update(new)
        return found, set(missing)

    def _project(self, items: Sequence[_Prepared], vectors: dict[str, tuple[float, ...]]) -> None:
        """Write the batch to the projections in one call per index: each call commits, so per-document
        calls would pay that cost once per document."""
        points: list[VectorPoint] = []
        keyword_docs: list[KeywordDoc] = []
        stale: list[str] = []
        for item in items:
            doc = item.source
            for c in item.chunks:
                key = _embedding_key(_embedding_text(doc.title, c))
                points.append(
                    VectorPoint(
                        c.chunk_id, vectors[key], c.doc_id, c.acl_class_id, c.content_hash, doc.source, c.doc_time
                    )
                )
                keyword_docs.append(
                    KeywordDoc(
                        c.chunk_id, c.doc_id, c.acl_class_id, doc.title, c.section_path, c.text, doc.source, c.doc_time
                    )
                )
            stale.extend(item.previous_chunk_ids - {c.chunk_id for c in item.chunks})
        self.run_all(
            [
                lambda: self._put_bodies(items),
                lambda: self.vectors.upsert(points),
                lambda: self.keywords.upsert(keyword_docs),
            ]
        )
        if stale:
            self.vectors.delete(sorted(stale))
            self.keywords.delete(sorted(stale))

    def _purge(self, name: str, index: object, *, rewrite_without: str | None = None) -> StorePurge:
        if not isinstance(index, Purgeable):
            return StorePurge(name, PurgeStatus.DELETED, self.clock(), "the engine offers no purge on demand")
        try:
            if index.purge_needs_rewrite and rewrite_without is not None:
                # An engine without an explicit merge drops a deleted entry's terms only with its segment:
                # rewrite the live documents sharing a segment with deleted entries (what the deletion
                # touched), or every live document when the engine cannot tell which.
                scope = index.rewrite_scope()
                if scope is None:
                    scope = [d.doc_id for d in self.documents.list_documents()]
                live = [d for d in scope if d != rewrite_without]
                if live:
                    self.reproject(live, vectors=False)
            complete, note = index.purge_deleted()
        except Exception as err:  # noqa: BLE001 - the deletion itself stands; the record says the purge failed
            return StorePurge(name, PurgeStatus.FAILED, self.clock(), f"{type(err).__name__}: {err}"[:300])
        return StorePurge(name, PurgeStatus.PURGED if complete else PurgeStatus.DELETED, self.clock(), note)

    def _put_bodies(self, items: Sequence[_Prepared]) -> None:
        for item in items:
            doc = item.source
            body = self.cipher.sealer(doc.doc_id)(doc.body) if self.cipher is not None else doc.body
            self.objects.put(_object_key(doc.doc_id, item.stored.content_hash), body)
            if item.stored.version > 1:
                # A first version has no older body to drop (a body a failed attempt left under the same
                # prefix goes with the prefix when the document is deleted).
                self._drop_old_bodies(doc.doc_id, item.stored.content_hash)

    def _drop_old_bodies(self, doc_id: str, keep_hash: str) -> None:
        keep = _object_key(doc_id, keep_hash)
        for key in self.objects.list_keys(_object_prefix(doc_id)):
            if key != keep:
                self.objects.delete_prefix(key)


def in_turn(tasks: Sequence[Callable[[], None]]) -> None:
    """Run tasks one after the other (DocumentIndexer.run_all's default)."""
    for task in tasks:
        task()


def _older_than_store(observed_at: datetime | None, existing: StoredDocument | None) -> bool:
    """A change event older than what the store already applied (a newer version, or a deletion)."""
    if observed_at is None or existing is None:
        return False
    newest = max((t for t in (existing.observed_at, existing.deleted_at) if t is not None), default=None)
    return newest is not None and observed_at < newest


def chunks_of_document(
    doc: SourceDocument, text: str, *, max_tokens: int, overlap_tokens: int, count_tokens: Callable[[str], int]
) -> list[Chunk]:
    """The document's chunks, cut and named as the indexer stores them: IDs from the document ID, the
    chunk text's hash and its occurrence (so two identical paragraphs get two IDs)."""
    seen: dict[str, int] = {}
    out: list[Chunk] = []
    spans = chunk_document(
        text, title=doc.title, max_tokens=max_tokens, overlap_tokens=overlap_tokens, count_tokens=count_tokens
    )
    spans = annotate_spans(doc.media_type, text, spans)  # page / speaker and time where the format has them
    for span in spans:
        piece = doc.body[span.start_byte : span.end_byte].decode("utf-8")
        piece_hash = content_hash(piece.encode("utf-8"))
        occurrence = seen.get(piece_hash, 0)
        seen[piece_hash] = occurrence + 1
        out.append(
            Chunk(
                chunk_id=chunk_id_for(doc.doc_id, piece_hash, occurrence),
                doc_id=doc.doc_id,
                seq=span.seq,
                breadcrumb=span.breadcrumb,
                start_byte=span.start_byte,
                end_byte=span.end_byte,
                text=piece,
                token_count=count_tokens(piece),
                content_hash=piece_hash,
                acl_class_id=doc.acl.acl_class_id,
                doc_time=doc.modified_at,
            )
        )
    return out


def _embedding_text(title: str, chunk: Chunk) -> str:
    """What the model embeds: the breadcrumb gives a chunk the context its own words may lack."""
    crumb = " > ".join(chunk.breadcrumb) or title
    return f"{crumb}\n{chunk.text}"


def _embedding_key(text: str) -> str:
    return content_hash(text.encode("utf-8"))


def _object_prefix(doc_id: str) -> str:
    return f"docs/{content_hash(doc_id.encode('utf-8')).removeprefix('sha256:')[:40]}/"


def _object_key(doc_id: str, body_hash: str) -> str:
    return _object_prefix(doc_id) + body_hash.removeprefix("sha256:")


def _indexed(item: _Prepared, embedded: AbstractSet[str]) -> IngestOutcome:
    doc, chunks = item.source, item.chunks
    new_keys = {
        _embedding_key(_embedding_text(doc.title, c)) for c in chunks if c.chunk_id not in item.previous_chunk_ids
    }
    current = {c.chunk_id for c in chunks}
    return IngestOutcome(
        doc.doc_id,
        IngestStatus.INDEXED if item.stored.version == 1 else IngestStatus.UPDATED,
        source=doc.source,
        uri=doc.uri,
        chunks_total=len(chunks),
        chunks_embedded=len(new_keys & embedded),
        chunks_removed=len(item.previous_chunk_ids - current),
    )


def _rejected(doc: SourceDocument, err: KgragError) -> IngestOutcome:
    return IngestOutcome(
        doc.doc_id, IngestStatus.REJECTED, source=doc.source, uri=doc.uri, error_code=err.code, message=err.message
    )


def body_object_key(doc_id: str, body_hash: str) -> str:
    """Where a document's stored body (sealed under its key when the stores encrypt) is kept."""
    return _object_key(doc_id, body_hash)
