"""Where ingestion requests go: straight through the in-process bus (embedded) or onto Kafka.

The CLI, the query API and the connector gateway all submit through this interface, so the HTTP layer
does not know which runtime it is on. The event models are imported where an event is built: a process
that only reads (a CLI search) never builds one, and building the pydantic models costs start-up time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from kgrag_core.acl import AclClass
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.handlers.protocol import Handler
from kgrag_core.ingest import IngestOutcome, IngestStatus, no_active_document
from kgrag_core.ports import IngestLog
from kgrag_core.shredding import ContentCipher
from kgrag_runtime.bus import InProcessBus
from kgrag_runtime.kafka.deliveries import Deliveries
from kgrag_runtime.single_writer import SingleWriter

ProgressCallback = Callable[[int], None]


class EventSink(Protocol):
    def produce(
        self, topic: str, key: str, payload: dict[str, object], headers: None = None, *, deliveries: Deliveries
    ) -> None: ...

    def flush(self, timeout_s: float, deliveries: Deliveries) -> None: ...

    def require_reachable(self) -> None: ...


class IngestGateway(Protocol):
    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]: ...

    def delete(self, doc_id: str) -> IngestOutcome: ...

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome: ...


def _deleted(doc_id: str) -> dict[str, object]:
    from kgrag_core.events import DocumentDeleted

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
    # The bus and the in-process indexes take one writer at a time (kgrag_runtime.single_writer).
    writer: SingleWriter = field(default_factory=SingleWriter)

    def __post_init__(self) -> None:
        # Subscribe before anything is published: the embedded bus keeps no retention for unheard topics.
        for handler in self.handlers:
            for topic in handler.topics:
                self.bus.subscribe(topic)

    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]:
        with self.writer.hold():
            return self._ingest(items, progress)

    def _ingest(self, items: Iterable[ConnectorItem], progress: ProgressCallback | None) -> list[IngestOutcome]:
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
        from kgrag_core.events import DOCUMENTS_CHANGED, document_changed_from_source

        self.bus.publish_many(
            DOCUMENTS_CHANGED, ((d.doc_id, document_changed_from_source(d).model_dump(mode="json")) for d in docs)
        )
        outcomes = self.drain()
        if progress:
            progress(len(docs))
        return outcomes

    def delete(self, doc_id: str) -> IngestOutcome:
        from kgrag_core.events import DOCUMENTS_DELETED

        with self.writer.hold():
            self.bus.publish(DOCUMENTS_DELETED, doc_id, _deleted(doc_id))
            return self.drain()[-1]

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome:
        from kgrag_core.events import ACL_CHANGED, AclChanged

        event = AclChanged(doc_id=doc_id, acl_principals=list(acl.principals), acl_malformed=acl.malformed)
        with self.writer.hold():
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


class ReadOnlyIngest:
    """The ingestion of an app opened for reading only (`open_embedded(reads_only=True)`): every write refuses."""

    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]:
        raise self._refusal()

    def delete(self, doc_id: str) -> IngestOutcome:
        raise self._refusal()

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome:
        raise self._refusal()

    @staticmethod
    def _refusal() -> KgragError:
        return KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            "This app was opened for reading only.",
            hint="Open it with open_embedded(settings) (reads_only=False) to ingest, delete or change ACLs.",
        )


@dataclass(slots=True)
class KafkaIngest:
    """Validate and produce change events; the workers index them. Done when Kafka acknowledged them.

    A caller never waits on a broker outage: with every broker known down it is refused at once, and an
    acknowledgement that does not come within `ack_timeout_s` is BROKER_UNAVAILABLE (HTTP 503 with
    Retry-After), never a client error.

    With a cipher, each event's content is sealed under its document's data key (created here when the
    document has none), so Kafka's log segments hold ciphertext that a deletion shreds (ADR 0008).
    """

    sink: EventSink
    cipher: ContentCipher | None = None
    ack_timeout_s: float = 5.0
    # Whether PostgreSQL holds an active document with this ID: a delete or ACL change of any other ID
    # answers DOCUMENT_NOT_FOUND, as on the embedded runtime, instead of queueing an event that does nothing.
    is_active: Callable[[str], bool] | None = None

    def ingest(
        self, items: Iterable[ConnectorItem], *, progress: ProgressCallback | None = None
    ) -> list[IngestOutcome]:
        from kgrag_core.events import DOCUMENTS_CHANGED, document_changed_from_source

        self.sink.require_reachable()
        deliveries = Deliveries()
        outcomes: list[IngestOutcome] = []
        for item in items:
            if isinstance(item, ConnectorFailure):
                outcomes.append(_failure_outcome(item))
            else:
                sealer = self.cipher.sealer(item.doc_id) if self.cipher is not None else None
                event = document_changed_from_source(item, sealer).model_dump(mode="json")
                self.sink.produce(DOCUMENTS_CHANGED, item.doc_id, event, deliveries=deliveries)
                outcomes.append(IngestOutcome(item.doc_id, IngestStatus.QUEUED, source=item.source, uri=item.uri))
            if progress:
                progress(1)
        self.sink.flush(self.ack_timeout_s, deliveries)
        return outcomes

    def delete(self, doc_id: str) -> IngestOutcome:
        from kgrag_core.events import DOCUMENTS_DELETED

        if self.is_active is not None and not self.is_active(doc_id):
            return no_active_document(doc_id)
        self._send_one(DOCUMENTS_DELETED, doc_id, _deleted(doc_id))
        return IngestOutcome(doc_id, IngestStatus.QUEUED, message="deletion queued")

    def change_acl(self, doc_id: str, acl: AclClass) -> IngestOutcome:
        from kgrag_core.events import ACL_CHANGED, AclChanged

        if self.is_active is not None and not self.is_active(doc_id):
            return no_active_document(doc_id)
        event = AclChanged(doc_id=doc_id, acl_principals=list(acl.principals), acl_malformed=acl.malformed)
        self._send_one(ACL_CHANGED, doc_id, event.model_dump(mode="json"))
        return IngestOutcome(doc_id, IngestStatus.QUEUED, message="ACL change queued")

    def _send_one(self, topic: str, key: str, payload: dict[str, object]) -> None:
        self.sink.require_reachable()
        deliveries = Deliveries()
        self.sink.produce(topic, key, payload, deliveries=deliveries)
        self.sink.flush(self.ack_timeout_s, deliveries)
