"""Per-caller delivery tracking for a shared Kafka producer (no Kafka import: the embedded runtime's
ingest gateway names this type without loading the client library)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message

# What a caller that got BROKER_UNAVAILABLE should wait before retrying (HTTP Retry-After).
BROKER_RETRY_AFTER_S = 5


class Deliveries:
    """The acknowledgements of the events one caller produced, so concurrent callers sharing a producer
    each learn the fate of their own events and never of another's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent = 0
        self.acked = 0
        self.errors: list[str] = []

    def expect(self) -> None:
        with self._lock:
            self.sent += 1

    def __call__(self, err: KafkaError | None, _msg: Message) -> None:
        with self._lock:
            if err is None:
                self.acked += 1
            else:
                self.errors.append(str(err))

    @property
    def pending(self) -> int:
        with self._lock:
            return self.sent - self.acked - len(self.errors)
