"""The chunk-indexer handler: documents.changed / documents.deleted → index → chunks.changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import (
    CHUNKS_CHANGED,
    DOCUMENTS_CHANGED,
    DOCUMENTS_DELETED,
    ChunksChanged,
    DocumentChanged,
    DocumentDeleted,
    source_from_document_changed,
)
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult, OutputEvent
from kgrag_core.indexing.indexer import DocumentIndexer, StagedIndex
from kgrag_core.ingest import IngestOutcome, IngestStatus


@dataclass(frozen=True, slots=True)
class StagedChunks:
    """A change batch embedded and not yet written: what `ChunkIndexerHandler.finish` writes."""

    keys: frozenset[str]  # the documents it touches
    prefix: HandlerResult  # what validation already decided (dead letters, replays of shredded documents)
    index: StagedIndex


@dataclass(slots=True)
class ChunkIndexerHandler:
    indexer: DocumentIndexer
    name: str = "chunk-indexer"
    topics: tuple[str, ...] = (DOCUMENTS_CHANGED, DOCUMENTS_DELETED)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        if topic == DOCUMENTS_DELETED:
            result = HandlerResult()
            for key, payload in batch:
                self._delete(key, payload, result)
            return result
        return self.finish(self.stage(topic, batch))

    # --- staged: a runner embeds the next batch while this one's writes run (StagedHandler) ---------------

    def conflict_keys(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> frozenset[str] | None:
        """The documents a change batch touches; None for deletions, which are never staged."""
        if topic != DOCUMENTS_CHANGED:
            return None
        return frozenset(_doc_key(key, payload) for key, payload in batch)

    def stage(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> StagedChunks:
        """Validate, chunk and embed a change batch; nothing but the embedding cache is written."""
        result = HandlerResult()
        docs: list[SourceDocument] = []
        for key, payload in batch:
            try:
                changed = DocumentChanged.model_validate(payload)
                docs.append(source_from_document_changed(changed, self.indexer.cipher))
            except ValidationError as err:
                self._poison(key, payload, ErrorCode.MALFORMED_EVENT, _brief(err), result)
            except KgragError as err:
                if err.code is ErrorCode.CONTENT_SHREDDED:
                    # A replayed change of a document deleted since: nothing to index, nothing to retry.
                    result.outcomes.append(IngestOutcome(changed.doc_id, IngestStatus.UNCHANGED, message=err.message))
                else:
                    self._poison(key, payload, err.code, err.message, result)
        return StagedChunks(frozenset(_doc_key(k, p) for k, p in batch), result, self.indexer.stage_batch(docs))

    def finish(self, staged: StagedChunks) -> HandlerResult:
        """Write a staged batch (projections, then PostgreSQL) and name the chunks.changed events."""
        result = HandlerResult(
            outputs=list(staged.prefix.outputs),
            dead_letters=list(staged.prefix.dead_letters),
            outcomes=list(staged.prefix.outcomes),
        )
        for outcome in self.indexer.write_staged(staged.index):
            result.outcomes.append(outcome)
            written = staged.index.written(outcome.doc_id)
            if outcome.status in (IngestStatus.INDEXED, IngestStatus.UPDATED) and written is not None:
                # What the commit just stored (the document's whole chunk set), without reading it back.
                version, chunk_ids = written
                event = ChunksChanged(doc_id=outcome.doc_id, version=version, chunk_ids=chunk_ids)
                result.outputs.append(OutputEvent(CHUNKS_CHANGED, outcome.doc_id, event.model_dump(mode="json")))
        return result

    def _delete(self, key: str, payload: Mapping[str, object], result: HandlerResult) -> None:
        try:
            event = DocumentDeleted.model_validate(payload)
        except ValidationError as err:
            self._poison(key, payload, ErrorCode.MALFORMED_EVENT, _brief(err), result)
            return
        outcome = self.indexer.delete(event.doc_id, observed_at=event.observed_at)
        result.outcomes.append(outcome)
        if outcome.status is IngestStatus.DELETED:
            # Announced only after PostgreSQL says DELETED: a projection that re-reads the store on this
            # event (the graph-writer) cannot race ahead of the deletion.
            gone = ChunksChanged(doc_id=event.doc_id, version=0, chunk_ids=[])
            result.outputs.append(OutputEvent(CHUNKS_CHANGED, event.doc_id, gone.model_dump(mode="json")))

    @staticmethod
    def _poison(key: str, payload: Mapping[str, object], code: ErrorCode, reason: str, result: HandlerResult) -> None:
        result.dead_letters.append(DeadLetter(key, payload, code.value, reason))
        doc_id = payload.get("doc_id") if isinstance(payload.get("doc_id"), str) else key
        result.outcomes.append(IngestOutcome(str(doc_id), IngestStatus.REJECTED, error_code=code, message=reason))


def _brief(err: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()[:5]]
    return "; ".join(parts)


def _doc_key(key: str, payload: Mapping[str, object]) -> str:
    doc_id = payload.get("doc_id")
    return doc_id if isinstance(doc_id, str) else key
