"""The embedded event bus: in-process topics partitioned by a stable hash of the key (the doc ID).

Events of one key always land in one partition and are handled in publish order, as on Kafka. The
runner hands each handler batches per (partition, topic), sends what the handler produces back onto the
bus, and keeps poison messages on a dead-letter topic named after the consumer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kgrag_core.handlers.protocol import DeadLetter, Handler
from kgrag_core.ids import stable_partition
from kgrag_core.ingest import IngestOutcome


@dataclass(slots=True)
class DrainReport:
    batches: int = 0
    events: int = 0
    outcomes: list[IngestOutcome] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)


class InProcessBus:
    def __init__(self, partitions: int = 8, batch_size: int = 64) -> None:
        if partitions < 1 or batch_size < 1:
            raise ValueError("partitions and batch_size must be positive")
        self.partitions = partitions
        self.batch_size = batch_size
        self._queues: dict[str, list[deque[tuple[str, Mapping[str, object]]]]] = {}
        self.dead_letters: dict[str, list[DeadLetter]] = {}
        self.dropped: dict[str, int] = {}

    def subscribe(self, topic: str) -> None:
        self._queues.setdefault(topic, [deque() for _ in range(self.partitions)])

    def publish(self, topic: str, key: str, event: Mapping[str, object]) -> None:
        queues = self._queues.get(topic)
        if queues is None:
            # Nobody consumes this topic in this process; an embedded bus keeps no retention.
            self.dropped[topic] = self.dropped.get(topic, 0) + 1
            return
        queues[stable_partition(key, self.partitions)].append((key, event))

    def publish_many(self, topic: str, events: Iterable[tuple[str, Mapping[str, object]]]) -> None:
        for key, event in events:
            self.publish(topic, key, event)

    def pending(self, topic: str | None = None) -> int:
        topics = [topic] if topic else list(self._queues)
        return sum(len(q) for t in topics for q in self._queues.get(t, []))

    def drain(self, handler: Handler) -> DrainReport:
        """Run the handler until its topics are empty.

        A batch takes events from every partition (in partition order, each partition's events in
        publish order), as a Kafka consumer's poll does: bigger batches let the embedder fill its own
        batches, and a document's events still reach the handler in order.
        """
        for topic in handler.topics:
            self.subscribe(topic)
        report = DrainReport()
        while any(self.pending(t) for t in handler.topics):
            for topic in handler.topics:
                batch = self._take(topic)
                if not batch:
                    continue
                result = handler.handle(topic, batch)
                for out in result.outputs:
                    self.publish(out.topic, out.key, out.payload)
                self.dead_letters.setdefault(f"{handler.name}.dlq", []).extend(result.dead_letters)
                report.batches += 1
                report.events += len(batch)
                report.outcomes.extend(result.outcomes)
                report.dead_letters.extend(result.dead_letters)
        return report

    def _take(self, topic: str) -> list[tuple[str, Mapping[str, object]]]:
        batch: list[tuple[str, Mapping[str, object]]] = []
        for queue in self._queues[topic]:
            while queue and len(batch) < self.batch_size:
                batch.append(queue.popleft())
        return batch
