"""An idempotent, schema-checking Kafka producer keyed by document ID."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.kafka.codec import encode


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
        config.update(extra or {})
        self._producer = Producer(config)
        self._errors: list[str] = []

    def produce(
        self, topic: str, key: str, payload: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> None:
        value = encode(topic, payload)
        self._send(self.topic_prefix + topic, key, value, headers)

    def produce_raw(
        self, topic: str, key: str | None, value: bytes | None, headers: Mapping[str, str] | None = None
    ) -> None:
        """Forward bytes as they are (dead letters keep the original message, however malformed)."""
        self._send(self.topic_prefix + topic, key, value, headers)

    def _send(self, topic: str, key: str | None, value: bytes | None, headers: Mapping[str, str] | None) -> None:
        while True:
            try:
                self._producer.produce(
                    topic,
                    value=value,
                    key=key.encode("utf-8") if key is not None else None,
                    headers=list((headers or {}).items()),
                    on_delivery=self._on_delivery,
                )
                break
            except BufferError:
                # The local queue is full: serve delivery callbacks until there is room (backpressure).
                self._producer.poll(0.5)
        self._producer.poll(0)

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait for every produced event to be acknowledged; raise if any was not."""
        remaining = self._producer.flush(timeout_s)
        errors, self._errors = self._errors, []
        if remaining or errors:
            raise KgragError(
                ErrorCode.INDEX_WRITE_FAILED,
                f"{remaining} events unacknowledged, {len(errors)} failed: {'; '.join(errors[:3])}",
            )

    def _on_delivery(self, err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            self._errors.append(str(err))
