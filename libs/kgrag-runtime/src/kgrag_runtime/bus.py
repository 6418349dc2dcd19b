"""The embedded event bus: in-process topics partitioned by a stable hash of the key (the doc ID).

Events of one key always land in one partition and are handled in publish order, as on Kafka. The
runner hands each handler batches per (partition, topic), sends what the handler produces back onto the
bus, and keeps poison messages on a dead-letter topic named after the consumer.

A handler that stages (`StagedHandler`: the chunk-indexer) runs one batch deep, as on Kafka: the next
batch is staged (embedded) on a helper thread while this one is written on the caller's thread, so every
index write stays on the thread that drains. A batch sharing a document with the one being written is
staged only after it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from kgrag_core.handlers.protocol import DeadLetter, Handler, HandlerResult, StagedHandler, StagedWork
from kgrag_core.ids import stable_partition
from kgrag_core.ingest import IngestOutcome


@dataclass(slots=True)
class DrainReport:
    batches: int = 0
    events: int = 0
    outcomes: list[IngestOutcome] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)


class InProcessBus:
    def __init__(self, partitions: int = 8, batch_size: int = 64, *, pipeline: bool = True) -> None:
        if partitions < 1 or batch_size < 1:
            raise ValueError("partitions and batch_size must be positive")
        self.partitions = partitions
        self.batch_size = batch_size
        self._queues: dict[str, list[deque[tuple[str, Mapping[str, object]]]]] = {}
        self.dead_letters: dict[str, list[DeadLetter]] = {}
        self.dropped: dict[str, int] = {}
        self.pipeline = pipeline
        self._stager: ThreadPoolExecutor | None = None

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
                if self.pipeline and isinstance(handler, StagedHandler):
                    keys = handler.conflict_keys(topic, batch)
                    if keys is not None:
                        self._drain_staged(handler, topic, batch, keys, report)
                        continue
                self._deliver(handler, batch, handler.handle(topic, batch), report)
        return report

    def _drain_staged(
        self,
        handler: StagedHandler,
        topic: str,
        batch: list[tuple[str, Mapping[str, object]]],
        keys: frozenset[str],
        report: DrainReport,
    ) -> None:
        """Write `batch` and every later batch of `topic` that can be staged, one batch deep."""
        staged: StagedWork = handler.stage(topic, batch)
        others = [t for t in handler.topics if t != topic]
        while True:
            # Only while the handler's other topics are empty: batches keep the order the serial loop gives.
            ahead = [] if any(self.pending(t) for t in others) else self._take(topic)
            ahead_keys = handler.conflict_keys(topic, ahead) if ahead else None
            future: Future[StagedWork] | None = None
            if ahead and ahead_keys is not None and not ahead_keys & keys:
                future = self._stager_pool().submit(handler.stage, topic, ahead)
            try:
                result = handler.finish(staged)
            except BaseException:
                if future is not None and not future.cancel():
                    future.exception()  # wait: nothing keeps running beside the failure
                if ahead:
                    self._put_back(topic, ahead)  # the serial path would not have taken it yet
                raise
            self._deliver(handler, batch, result, report)
            if not ahead:
                return
            if ahead_keys is None:  # cannot be staged: it runs alone
                self._deliver(handler, ahead, handler.handle(topic, ahead), report)
                return
            # Staged beside the write, or (sharing a document with it) only now.
            staged = future.result() if future is not None else handler.stage(topic, ahead)
            batch, keys = ahead, ahead_keys

    def _deliver(
        self,
        handler: Handler,
        batch: list[tuple[str, Mapping[str, object]]],
        result: HandlerResult,
        report: DrainReport,
    ) -> None:
        for out in result.outputs:
            self.publish(out.topic, out.key, out.payload)
        self.dead_letters.setdefault(f"{handler.name}.dlq", []).extend(result.dead_letters)
        report.batches += 1
        report.events += len(batch)
        report.outcomes.extend(result.outcomes)
        report.dead_letters.extend(result.dead_letters)

    def _put_back(self, topic: str, batch: list[tuple[str, Mapping[str, object]]]) -> None:
        """Return taken events to the front of their partitions, in their order."""
        queues = self._queues[topic]
        for key, event in reversed(batch):
            queues[stable_partition(key, self.partitions)].appendleft((key, event))

    def _stager_pool(self) -> ThreadPoolExecutor:
        if self._stager is None:
            self._stager = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgrag-stage")
        return self._stager

    def _take(self, topic: str) -> list[tuple[str, Mapping[str, object]]]:
        batch: list[tuple[str, Mapping[str, object]]] = []
        for queue in self._queues[topic]:
            while queue and len(batch) < self.batch_size:
                batch.append(queue.popleft())
        return batch
