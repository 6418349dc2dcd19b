"""Create the event topics and the dead-letter topics (idempotent)."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kgrag_runtime.kafka.codec import dead_letter_topic
from kgrag_runtime.schema_export import EVENTS

CONSUMERS = (
    "chunk-indexer",
    "deletion-worker",
    "acl-propagator",
    "graph-writer",
    "extractor",
    "entity-resolver",
    "community-builder",
)


def all_topics(prefix: str = "") -> list[str]:
    return [prefix + t for t in sorted(EVENTS) + [dead_letter_topic(c) for c in CONSUMERS]]


def ensure_topics(
    bootstrap: str, *, partitions: int, replication: int, prefix: str = "", timeout_s: float = 30.0
) -> list[str]:
    """Create missing topics; return the ones created. Dead-letter topics get 1 partition: order there
    does not matter and they are read by people, not consumers at scale."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    wanted = [
        NewTopic(name, num_partitions=1 if name.endswith(".dlq") else partitions, replication_factor=replication)
        for name in all_topics(prefix)
        if name not in existing
    ]
    if not wanted:
        return []
    created: list[str] = []
    for name, future in admin.create_topics(wanted, operation_timeout=timeout_s).items():
        try:
            future.result()
            created.append(name)
        except KafkaException as err:
            if err.args[0].code() != err.args[0].TOPIC_ALREADY_EXISTS:
                raise
    return sorted(created)
