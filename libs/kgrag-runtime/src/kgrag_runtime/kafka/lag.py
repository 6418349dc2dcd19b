"""Consumer lag as Kafka defines it, read off the broker on a thread of its own.

Lag is the log-end offset minus the group's committed offset, per partition this consumer owns: what
would be redelivered if it died now. The consume position (what the consumer has fetched) is not lag —
a batch in hand but uncommitted is still work to do — and cached watermarks go stale exactly when it
matters (a paused or stalled consumer stops fetching). Asking the broker takes a round trip per request,
so it runs beside the consume loop, never on it: the loop's latency does not depend on the metric.

A reading carries the time of the last successful refresh; when the broker stops answering, the reading
goes stale and readiness says so instead of repeating the last number.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

log = logging.getLogger(__name__)

Partition = tuple[str, int]
# confluent-kafka's OffsetSpec factories carry no annotations.
_LATEST: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
_EARLIEST: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]


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
        config: dict[str, Any] = {"bootstrap.servers": bootstrap}
        # Only client-level settings apply to the admin client; consumer ones (group.id, ...) would warn.
        config.update({k: v for k, v in (extra_config or {}).items() if k.startswith(("security.", "sasl.", "ssl."))})
        self._config = config
        self._admin = AdminClient(config)
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
        if self.reading.error is not None:
            # After a broker restart an admin client's requests can keep timing out on connections it still
            # believes in; a fresh client reconnects (cheap: one every few seconds while failing).
            self._admin = AdminClient(self._config)
        try:
            if parts:
                per_partition = self._measure(parts)
            else:
                # Nothing assigned: no lag, but readiness still needs to know the broker answers.
                self._admin.list_topics(timeout=self.request_timeout_s)
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
        request = [ConsumerGroupTopicPartitions(self.group_id, [TopicPartition(t, p) for t, p in parts])]
        (group_future,) = self._admin.list_consumer_group_offsets(request, request_timeout=timeout).values()
        committed = {(tp.topic, tp.partition): tp.offset for tp in group_future.result(self._wait()).topic_partitions}
        latest = self._offsets(parts, _LATEST)
        # A partition the group never committed on starts from its earliest offset (auto.offset.reset).
        never = [p for p in parts if committed.get(p, -1) < 0]
        earliest = self._offsets(never, _EARLIEST) if never else {}
        return {p: max(0, latest[p] - (earliest[p] if p in earliest else committed[p])) for p in parts}

    def _wait(self) -> float:
        """How long to wait on a future: the request's own timeout, plus a little for the answer to arrive."""
        return self.request_timeout_s + 1.0

    def _offsets(self, parts: list[Partition], spec: OffsetSpec) -> dict[Partition, int]:
        futures = self._admin.list_offsets(
            {TopicPartition(t, p): spec for t, p in parts}, request_timeout=self.request_timeout_s
        )
        return {(tp.topic, tp.partition): f.result(self._wait()).offset for tp, f in futures.items()}

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
