"""Where ingestion requests go: straight through the in-process bus (embedded) or onto Kafka.

The CLI, the query API and the connector gateway all submit through this interface, so the HTTP layer
does not know which runtime it is on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from kgrag_core.acl import AclClass
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.events import (
    ACL_CHANGED,
    DOCUMENTS_CHANGED,
    DOCUMENTS_DELETED,
    AclChanged,
    DocumentDeleted,
    document_changed_from_source,
)
from kgrag_core.handlers.protocol import Handler
from kgrag_core.ingest import IngestOutcome, IngestStatus
from kgrag_core.ports import IngestLog
from kgrag_core.shredding import ContentCipher
from kgrag_runtime.bus import InProcessBus

ProgressCallback = Callable[[int], None]


class EventSink(Protocol):
    def produce(self, topic: str, key: str, payload: dict[str, object]) -> None: ...

    def flush(self, timeout_s: float = 30.0) -> None: ...


class IngestGateway(Protocol):
    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]: ...

    def delete(self, doc_id: str) -> IngestOutcome: ...

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome: ...


def _deleted(doc_id: str) -> dict[str, object]:
    return DocumentDeleted(doc_id=doc_id, observed_at=datetime.now(UTC)).model_dump(mode="json")


def _failure_outcome(item: ConnectorFailure) -> IngestOutcome:
    return IngestOutcome(
        item.doc_id or item.uri, IngestStatus.REJECTED, uri=item.uri, error_code=item.code, message=item.message
    )


@dataclass(slots=True)
class EmbeddedIngest:
    """Publish on the in-process bus and run the handlers until it is drained: done when it returns."""

    bus: InProcessBus
    handlers: Sequence[Handler]
    ingest_log: IngestLog
    batch_documents: int = 64
    dead_letter_counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Subscribe before anything is published: the embedded bus keeps no retention for unheard topics.
        for handler in self.handlers:
            for topic in handler.topics:
                self.bus.subscribe(topic)

    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]:
        outcomes: list[IngestOutcome] = []
        failures: list[IngestOutcome] = []
        pending: list[SourceDocument] = []
        for item in items:
            if isinstance(item, ConnectorFailure):
                failures.append(_failure_outcome(item))
                if progress:
                    progress(1)
                continue
            pending.append(item)
            if len(pending) >= self.batch_documents:
                outcomes.extend(self._index(pending, progress))
                pending = []
        if pending:
            outcomes.extend(self._index(pending, progress))
        # Failures the connector found never reached the bus; they belong in the ingest log all the same.
        self.ingest_log.record_outcomes(failures)
        return failures + outcomes

    def _index(self, docs: Sequence[SourceDocument], progress: ProgressCallback | None) -> list[IngestOutcome]:
        self.bus.publish_many(
            DOCUMENTS_CHANGED, ((d.doc_id, document_changed_from_source(d).model_dump(mode="json")) for d in docs)
        )
        outcomes = self.drain()
        if progress:
            progress(len(docs))
        return outcomes

    def delete(self, doc_id: str) -> IngestOutcome:
        self.bus.publish(DOCUMENTS_DELETED, doc_id, _deleted(doc_id))
        return self.drain()[-1]

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome:
        event = AclChanged(doc_id=doc_id, acl_principals=list(acl.principals), acl_malformed=acl.malformed)
        self.bus.publish(ACL_CHANGED, doc_id, event.model_dump(mode="json"))
        return self.drain()[-1]

    def drain(self) -> list[IngestOutcome]:
        outcomes: list[IngestOutcome] = []
        while any(self.bus.pending(t) for h in self.handlers for t in h.topics):
            for handler in self.handlers:
                report = self.bus.drain(handler)
                outcomes.extend(report.outcomes)
        self.ingest_log.record_outcomes(outcomes)
        return outcomes


@dataclass(slots=True)
class KafkaIngest:
    """Validate and produce change events; the workers index them. Done when Kafka acknowledged them.

    With a cipher, each event's content is sealed under its document's data key (created here when the
    document has none), so Kafka's log segments hold ciphertext that a deletion shreds (ADR 0008).
    """

    sink: EventSink
    cipher: ContentCipher | None = None

    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]:
        outcomes: list[IngestOutcome] = []
        for item in items:
            if isinstance(item, ConnectorFailure):
                outcomes.append(_failure_outcome(item))
            else:
                sealer = self.cipher.sealer(item.doc_id) if self.cipher is not None else None
                event = document_changed_from_source(item, sealer)
                self.sink.produce(DOCUMENTS_CHANGED, item.doc_id, event.model_dump(mode="json"))
                outcomes.append(IngestOutcome(item.doc_id, IngestStatus.QUEUED, source=item.source, uri=item.uri))
            if progress:
                progress(1)
        self.sink.flush()
        return outcomes

    def delete(self, doc_id: str) -> IngestOutcome:
        self.sink.produce(DOCUMENTS_DELETED, doc_id, _deleted(doc_id))
        self.sink.flush()
        return IngestOutcome(doc_id, IngestStatus.QUEUED, message="deletion queued")

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome:
        event = AclChanged(doc_id=doc_id, acl_principals=list(acl.principals), acl_malformed=acl.malformed)
        self.sink.produce(ACL_CHANGED, doc_id, event.model_dump(mode="json"))
        self.sink.flush()
        return IngestOutcome(doc_id, IngestStatus.QUEUED, message="ACL change queued")
