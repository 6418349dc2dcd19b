"""An example producer for systems that write change events straight to Kafka's `documents.changed`
(and `documents.deleted`), skipping the HTTP API: plain confluent-kafka and JSON, nothing of kgrag's.

The payloads follow the published JSON Schemas, `schemas/events/documents.changed.v1.json` and
`documents.deleted.v1.json`. Key every event by its `doc_id` (the topics are partitioned by it, so one
document's events stay in order). A change event carries the document's whole current content, so
producing it twice has one effect: the chunk indexer finds nothing changed the second time. An event the
schema refuses goes to the consumer's dead-letter topic with its error code; the partition moves on.

    python -m kgrag_connectors.kafka_producer BOOTSTRAP TOPIC_PREFIX DOC_ID TITLE TEXT [GROUP ...]
"""

from __future__ import annotations

import base64
import json
import sys
from datetime import UTC, datetime
from typing import Any


def document_changed(
    doc_id: str,
    title: str,
    body: bytes,
    *,
    source: str = "kafka",
    uri: str | None = None,
    groups: tuple[str, ...] = (),
    users: tuple[str, ...] = (),
    public: bool = False,
    media_type: str = "text/markdown",
    modified_at: datetime | None = None,
) -> dict[str, Any]:
    """A `documents.changed` v1 payload. Readers: `public`, or the groups and users (none: admins only)."""
    principals = ["public"] if public else [f"group:{g}" for g in groups] + [f"user:{u}" for u in users]
    return {
        "schema_version": 1,
        "event_type": "documents.changed",
        "doc_id": doc_id,
        "source": source,
        "uri": uri or f"{source}://{doc_id}",
        "title": title,
        "body_b64": base64.b64encode(body).decode("ascii"),
        "acl_principals": principals,
        # No readers named is no reader at all: fail closed (admins only), as kgrag does for a bad ACL.
        "acl_malformed": not principals,
        "modified_at": modified_at.isoformat() if modified_at else None,
        "media_type": media_type,
        "metadata": {},
        "observed_at": datetime.now(UTC).isoformat(),
    }


def document_deleted(doc_id: str, reason: str = "") -> dict[str, Any]:
    return {
        "schema_version": 1,
        "event_type": "documents.deleted",
        "doc_id": doc_id,
        "reason": reason,
        "observed_at": datetime.now(UTC).isoformat(),
    }


def produce(producer: Any, topic_prefix: str, event: dict[str, Any], *, timeout_s: float = 30.0) -> None:
    """Send one event keyed by its doc_id to `<prefix><event_type>` and wait for the broker's ack."""
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    value = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    producer.produce(topic_prefix + event["event_type"], key=event["doc_id"], value=value, on_delivery=delivered)
    if producer.flush(timeout_s) != 0:
        raise TimeoutError(f"the broker did not acknowledge {event['doc_id']!r} within {timeout_s} s")
    if failures:
        raise RuntimeError(f"the broker refused {event['doc_id']!r}: {failures[0]}")


def main(argv: list[str]) -> None:
    from confluent_kafka import Producer

    bootstrap, prefix, doc_id, title, text, *groups = argv
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    produce(producer, prefix, document_changed(doc_id, title, text.encode("utf-8"), groups=tuple(groups)))
    print(f"produced {doc_id} to {prefix}documents.changed")


if __name__ == "__main__":
    main(sys.argv[1:])
