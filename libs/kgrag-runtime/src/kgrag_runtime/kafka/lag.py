"""Consumer lag as Kafka defines it, read off the broker on a thread of its own.

Lag is the log-end offset minus the group's committed offset, per partition this consumer owns: what
would be redelivered if it died now. The consume position (what the consumer has fetched) is not lag —
a batch in hand but uncommitted is still work to do — and cached watermarks go stale exactly when it
matters (a paused or stalled consumer stops fetching). Asking the broker takes a round trip per request,
so it runs beside the consume loop, never on it: the loop's latency does not depend on the metric.

A reading carries the time of the last successful refresh; when the broker stops answering, the reading
goes stale and readiness says so instead of repeating the last number.

The questions go through a consumer of its own that never joins the group (no subscribe, no poll), with
synchronous calls: nothing is left in flight when a call times out, and the one client lives as long as the
monitor. The admin client it replaces needed a fresh instance after a broker restart (its requests kept
timing out), and destroying the old one beside the worker's consumer and producer crashed the process
(the broker-restart fault test, in CI).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, TopicPartition

log = logging.getLogger(__name__)

Partition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class LagReading:
    """The last successful measurement, and whether it is recent enough to trust."""

    total: int
    per_partition: Mapping[Partition, int] = field(default_factory=dict)
    measured_at: float | None = None  # monotonic seconds; None before the first success
    error: str | None = None  # the last refresh's failure, if it failed

    def age_s(self, now: float) -> float | None:
        return None if self.measured_at is None else now - self.measured_at


class LagMonitor:
    """Measures the committed lag of the partitions assigned to one consumer of `group_id`."""

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        *,
        interval_s: float = 5.0,
        request_timeout_s: float = 5.0,
        extra_config: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_reading: Callable[[LagReading], None] | None = None,
    ) -> None:
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            # committed() reads this group's offsets; this consumer never subscribes, so it never joins.
            "group.id": group_id,
            "enable.auto.commit": False,
            "socket.connection.setup.timeout.ms": max(1000, int(request_timeout_s * 1000)),
            "reconnect.backoff.max.ms": 1000,
        }
        # Only client-level settings apply; the worker's consumer settings (session timeouts ...) are its own.
        config.update({k: v for k, v in (extra_config or {}).items() if k.startswith(("security.", "sasl.", "ssl."))})
        self._client = Consumer(config)
        self._closed = False
        self.group_id = group_id
        self.interval_s = interval_s
        self.request_timeout_s = request_timeout_s
        self._clock = clock
        self._on_reading = on_reading
        self.refreshes = 0  # successful measurements, for benchmarks and tests
        self._lock = threading.Lock()
        self._assigned: set[Partition] = set()
        self._reading = LagReading(total=0)
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # --- assignment, fed by the consumer's rebalance callbacks ---------------------------------------------

    def assigned(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._assigned.update((tp.topic, tp.partition) for tp in partitions)
        self._wake.set()

    def revoked(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._assigned.difference_update((tp.topic, tp.partition) for tp in partitions)
        self._wake.set()

    @property
    def partitions(self) -> frozenset[Partition]:
        with self._lock:
            return frozenset(self._assigned)

    # --- measuring -----------------------------------------------------------------------------------------

    @property
    def reading(self) -> LagReading:
        with self._lock:
            return self._reading

    def refresh(self) -> LagReading:
        """Measure once (blocking, bounded by the request timeout); keep the last good numbers on failure."""
        parts = sorted(self.partitions)
        try:
            if parts:
                per_partition = self._measure(parts)
            else:
                # Nothing assigned: no lag, but readiness still needs to know the broker answers.
                self._client.list_topics(timeout=self.request_timeout_s)
                per_partition = {}
        except Exception as err:  # noqa: BLE001 - a metric must never kill its thread; the reading goes stale
            log.info("consumer lag unavailable for now: %s: %s", type(err).__name__, err)
            with self._lock:
                previous = self._reading
                self._reading = LagReading(previous.total, previous.per_partition, previous.measured_at, str(err))
                return self._reading
        reading = LagReading(sum(per_partition.values()), per_partition, self._clock(), None)
        with self._lock:
            self._reading = reading
            self.refreshes += 1
        if self._on_reading is not None:
            self._on_reading(reading)
        return reading

    def _measure(self, parts: list[Partition]) -> dict[Partition, int]:
        timeout = self.request_timeout_s
        asked = self._client.committed([TopicPartition(t, p) for t, p in parts], timeout=timeout)
        committed = {(tp.topic, tp.partition): tp.offset for tp in asked}
        out: dict[Partition, int] = {}
        for part in parts:
            low, high = self._client.get_watermark_offsets(TopicPartition(*part), timeout=timeout, cached=False)
            # A partition the group never committed on starts from its earliest offset (auto.offset.reset).
            start = committed.get(part, -1)
            out[part] = max(0, high - (low if start < 0 else start))
        return out

    # --- background thread ---------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> LagMonitor:
        def loop() -> None:
            while not stop.is_set():
                self.refresh()
                self._wake.wait(self.interval_s)
                self._wake.clear()

        self._thread = threading.Thread(target=loop, name=f"lag-{self.group_id}", daemon=True)
        self._thread.start()
        return self

    def join(self, timeout_s: float = 10.0) -> None:
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if not self._closed and (self._thread is None or not self._thread.is_alive()):
            self._closed = True
            self._client.close()  # it never joined the group: closing only destroys the handle, on this thread
