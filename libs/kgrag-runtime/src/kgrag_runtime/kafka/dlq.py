"""Read a consumer's dead-letter topic, and re-submit its records after a fix.

Each dead letter is the original record (bytes and key as they were consumed) with headers naming its
error code, reason and source coordinates (`source_topic`, `source_partition`, `source_offset`). A replay
produces every record back onto its source topic unchanged, with a `replayed_from` header, and commits
its progress under a group of its own: a second replay re-submits only what was dead-lettered since.
A record without a source topic (a handler's own finding, not a consumed record) is listed, not replayed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kgrag_runtime.kafka.codec import dead_letter_topic
from kgrag_runtime.kafka.producer import EventProducer


@dataclass(frozen=True, slots=True)
class DeadLetterRecord:
    partition: int
    offset: int
    key: str | None
    value: bytes | None
    headers: dict[str, str]

    @property
    def source_topic(self) -> str | None:
        return self.headers.get("source_topic") or None

    def summary(self) -> dict[str, object]:
        return {
            "offset": self.offset,
            "key": self.key,
            "error_code": self.headers.get("error_code"),
            "reason": self.headers.get("reason"),
            "source": None
            if self.source_topic is None
            else f"{self.source_topic}/{self.headers.get('source_partition')}@{self.headers.get('source_offset')}",
            "bytes": 0 if self.value is None else len(self.value),
        }


@dataclass(slots=True)
class ReplayReport:
    dlq_topic: str
    listed: list[dict[str, object]] = field(default_factory=list)
    replayed: int = 0
    not_replayable: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "dlq_topic": self.dlq_topic,
            "records": len(self.listed),
            "replayed": self.replayed,
            "not_replayable": self.not_replayable,
            "items": self.listed,
        }


def replay_group(group_prefix: str, consumer_name: str) -> str:
    return f"{group_prefix}.dlq-replay.{consumer_name}"


def _open(bootstrap: str, dlq_topic: str, group_id: str | None) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            # Listing only: a throwaway group reads from the start and commits nothing.
            "group.id": group_id or f"kgrag-dlq-list-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([dlq_topic])
    return consumer


def _records(consumer: Consumer, *, limit: int, idle_timeout_s: float) -> Iterator[DeadLetterRecord]:
    """Records from the group's committed position (or the beginning), up to `limit`; stops at the end
    of every assigned partition, or after `idle_timeout_s` without any event."""
    at_end: set[int] = set()
    seen = 0
    while seen < limit:
        message: Message | None = consumer.poll(idle_timeout_s)
        if message is None:
            return
        err = message.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(err)
            at_end.add(message.partition() or 0)
            assigned = {tp.partition for tp in consumer.assignment()}
            if assigned and assigned <= at_end:
                return
            continue
        at_end.discard(message.partition() or 0)
        raw_key = message.key()
        seen += 1
        yield DeadLetterRecord(
            partition=message.partition() or 0,
            offset=message.offset() or 0,
            key=raw_key.decode("utf-8", "replace") if raw_key is not None else None,
            value=message.value(),
            headers=_headers(message),
        )


def _headers(message: Message) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in message.headers() or []:
        name, value = cast(tuple[str, bytes | None], item)  # the stubs type headers loosely
        out[name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
    return out


def replay_dead_letters(
    bootstrap: str,
    consumer_name: str,
    *,
    producer: EventProducer,
    group_prefix: str,
    replay: bool,
    limit: int = 10_000,
    idle_timeout_s: float = 10.0,
) -> ReplayReport:
    """List (and with `replay`, re-submit) the dead letters of `consumer_name`."""
    dlq = producer.topic_prefix + dead_letter_topic(consumer_name)
    report = ReplayReport(dlq)
    last: dict[int, int] = {}
    consumer = _open(bootstrap, dlq, replay_group(group_prefix, consumer_name) if replay else None)
    try:
        for record in _records(consumer, limit=limit, idle_timeout_s=idle_timeout_s):
            report.listed.append(record.summary())
            if not replay:
                continue
            source = record.source_topic
            if source is None or not source.startswith(producer.topic_prefix):
                report.not_replayable += 1
            else:
                producer.produce_raw(
                    source.removeprefix(producer.topic_prefix),
                    record.key,
                    record.value,
                    {"replayed_from": f"{dlq}/{record.partition}@{record.offset}"},
                )
                report.replayed += 1
            last[record.partition] = record.offset
            if report.replayed and report.replayed % 500 == 0:
                _commit(producer, consumer, dlq, last)
        if replay and last:
            _commit(producer, consumer, dlq, last)
    finally:
        consumer.close()
    return report


def _commit(producer: EventProducer, consumer: Consumer, dlq: str, last: dict[int, int]) -> None:
    # Re-submitted before the progress is committed: a crash between the two replays a record twice,
    # which the idempotent handlers absorb, and never loses one.
    producer.flush()
    consumer.commit(offsets=[TopicPartition(dlq, p, o + 1) for p, o in sorted(last.items())], asynchronous=False)
