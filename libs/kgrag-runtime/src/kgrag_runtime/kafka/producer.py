"""An idempotent, schema-checking Kafka producer keyed by document ID."""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.kafka.codec import encode
from kgrag_runtime.kafka.deliveries import BROKER_RETRY_AFTER_S, Deliveries


class EventProducer:
    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str = "kgrag",
        topic_prefix: str = "",
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.topic_prefix = topic_prefix
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            # Idempotence gives ordered, de-duplicated writes per partition across retries.
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": "lz4",
        }
        self._brokers_down = threading.Event()
        # The callback holds the event, not this object: a Producer -> callback -> self cycle leaves the client
        # to the cyclic GC, which may destroy it on any thread at any moment (CI saw a segfault) rather than
        # when its last owner lets go of it.
        config["error_cb"] = functools.partial(_note_error, self._brokers_down)
        config.update(extra or {})
        self._producer = Producer(config)
        self._all = Deliveries()

    def produce(
        self,
        topic: str,
        key: str,
        payload: Mapping[str, object],
        headers: Mapping[str, str] | None = None,
        *,
        deliveries: Deliveries | None = None,
    ) -> None:
        value = encode(topic, payload)
        self._send(self.topic_prefix + topic, key, value, headers, deliveries)

    def produce_raw(
        self, topic: str, key: str | None, value: bytes | None, headers: Mapping[str, str] | None = None
    ) -> None:
        """Forward bytes as they are (dead letters keep the original message, however malformed)."""
        self._send(self.topic_prefix + topic, key, value, headers)

    def _send(
        self,
        topic: str,
        key: str | None,
        value: bytes | None,
        headers: Mapping[str, str] | None,
        deliveries: Deliveries | None = None,
    ) -> None:
        tracker = deliveries or self._all
        while True:
            try:
                self._producer.produce(
                    topic,
                    value=value,
                    key=key.encode("utf-8") if key is not None else None,
                    headers=list((headers or {}).items()),
                    on_delivery=tracker,
                )
                tracker.expect()
                break
            except BufferError:
                # The local queue is full: serve delivery callbacks until there is room (backpressure).
                self._producer.poll(0.5)
        self._producer.poll(0)

    def flush(self, timeout_s: float = 30.0, deliveries: Deliveries | None = None) -> None:
        """Wait (at most `timeout_s`) until the events are acknowledged: the caller's own `deliveries`, or
        everything produced without one. Unacknowledged in time → BROKER_UNAVAILABLE (the events stay
        queued and may still land: a retry is safe, every write downstream is idempotent); refused by
        the broker → INDEX_WRITE_FAILED."""
        tracker = deliveries or self._all
        self._producer.flush(timeout_s)
        pending = tracker.pending
        errors, tracker.errors = tracker.errors, []
        if errors:
            raise KgragError(
                ErrorCode.INDEX_WRITE_FAILED,
                f"{len(errors)} events refused by Kafka: {'; '.join(errors[:3])}",
            )
        if pending:
            raise _unavailable(f"{pending} events not acknowledged by Kafka within {timeout_s:g} s")

    def reachable(self, timeout_s: float = 1.0) -> bool:
        """False while librdkafka reports every broker down and a quick metadata request fails too."""
        if not self._brokers_down.is_set():
            return True
        try:
            self._producer.list_topics(timeout=timeout_s)
        except KafkaException:
            return False
        self._brokers_down.clear()
        return True

    def brokers(self, timeout_s: float) -> int:
        """How many brokers the cluster's metadata lists (KafkaException when none answers in time)."""
        return len(self._producer.list_topics(timeout=timeout_s).brokers)

    def close(self) -> None:
        """Drop what is still queued and destroy the client now, on this thread: a client left to the garbage
        collector is destroyed wherever a collection happens to run, possibly inside another client's callback."""
        self._producer.purge()
        self._producer.poll(0)
        self._producer.close()

    def require_reachable(self) -> None:
        if not self.reachable():
            raise _unavailable("Kafka is unreachable: no broker answers")


def _note_error(brokers_down: threading.Event, err: KafkaError) -> None:
    if err.code() == KafkaError._ALL_BROKERS_DOWN:
        brokers_down.set()


def _unavailable(message: str) -> KgragError:
    return KgragError(
        ErrorCode.BROKER_UNAVAILABLE,
        message,
        hint=f"Retry in {BROKER_RETRY_AFTER_S} s; a retry is safe (ingestion is idempotent).",
    )
