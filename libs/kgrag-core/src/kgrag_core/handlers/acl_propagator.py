"""The acl-propagator handler: acl.changed → authoritative store first, then every projection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from kgrag_core.acl import PRIVATE_ACL, AclClass
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import ACL_CHANGED, CHUNKS_CHANGED, AclChanged, ChunksChanged
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult, OutputEvent
from kgrag_core.indexing.indexer import DocumentIndexer
from kgrag_core.ingest import IngestOutcome, IngestStatus


@dataclass(slots=True)
class AclPropagatorHandler:
    indexer: DocumentIndexer
    name: str = "acl-propagator"
    topics: tuple[str, ...] = (ACL_CHANGED,)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        for key, payload in batch:
            try:
                event = AclChanged.model_validate(payload)
            except ValidationError as err:
                reason = "; ".join(str(e["msg"]) for e in err.errors()[:3])
                result.dead_letters.append(DeadLetter(key, payload, ErrorCode.MALFORMED_EVENT.value, reason))
                result.outcomes.append(
                    IngestOutcome(key, IngestStatus.REJECTED, error_code=ErrorCode.MALFORMED_EVENT, message=reason)
                )
                continue
            try:
                acl = AclClass.of(event.acl_principals, malformed=event.acl_malformed)
            except KgragError as err:  # INVALID_PRINCIPAL: a name no reader can have
                # Fail closed, as over HTTP: the document becomes admin-only rather than keeping its old readers.
                closed = self.indexer.change_acl(event.doc_id, PRIVATE_ACL)
                message = f"{err.message} The document is private until a valid ACL arrives."
                result.dead_letters.append(DeadLetter(key, payload, err.code.value, message))
                result.outcomes.append(IngestOutcome(key, IngestStatus.REJECTED, error_code=err.code, message=message))
                self._announce(result, event.doc_id, closed)
                continue
            outcome = self.indexer.change_acl(event.doc_id, acl)
            result.outcomes.append(outcome)
            self._announce(result, event.doc_id, outcome)
        return result

    def _announce(self, result: HandlerResult, doc_id: str, outcome: IngestOutcome) -> None:
        """Tell the graph side which chunks changed readers, once the store and indexes have the new ACL."""
        if outcome.status is IngestStatus.ACL_UPDATED:
            chunk_ids = [c.chunk_id for c in self.indexer.documents.chunks_of(doc_id)]
            changed = ChunksChanged(doc_id=doc_id, version=0, chunk_ids=chunk_ids)
            result.outputs.append(OutputEvent(CHUNKS_CHANGED, doc_id, changed.model_dump(mode="json")))
