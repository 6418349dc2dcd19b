"""The consumer runner one batch deep against a real broker: batch N+1 is staged while batch N's writes run,
offsets are committed in order and only after a batch's writes, a batch sharing a document with the one in
flight waits for it, and a failed write is redone alone before anything after it (issue 10, item 2)."""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pytest
from confluent_kafka import Message
from confluent_kafka.admin import AdminClient

from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED, ChunksChanged
from kgrag_core.handlers.protocol import HandlerResult, OutputEvent, StagedHandler
from kgrag_runtime.distributed import producer
from kgrag_runtime.kafka.runner import ConsumerRunner, RunnerSettings
from kgrag_runtime.kafka.topics import all_topics, ensure_topics
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import group_id
from tests.integration.conftest import endpoint, wait_for

pytestmark = pytest.mark.integration

# One partition, so the batches come in produce order; "d" and "g" each open the batch after their first
# event's batch (batches of 2), so the runner must wait for one write before staging the next.
KEYS = ["a", "b", "c", "d", "d", "e", "f", "g", "g", "h", "i", "j"]
FAIL_ONCE = "c"  # the first write of the batch holding this key fails


@dataclass(frozen=True)
class _Staged:
    keys: frozenset[str]
    batch: tuple[tuple[str, Mapping[str, object]], ...]


class RecordingHandler:
    """A staged handler that logs when each stage and write begins and ends. Each write holds until
    another batch starts staging (or 1 s passes), so overlap shows whenever the runner allows it."""

    name = "pipe-probe"
    topics = (DOCUMENTS_CHANGED,)

    def __init__(self, *, fail_once: str | None = FAIL_ONCE) -> None:
        self.log: list[tuple[str, str, frozenset[str]]] = []  # (event, phase, keys)
        self.written: list[str] = []  # keys, in the order their writes succeeded
        self._lock = threading.Lock()
        self._stage_started = threading.Event()
        self._fail_once = fail_once

    def _note(self, event: str, phase: str, keys: frozenset[str]) -> None:
        with self._lock:
            self.log.append((event, phase, keys))

    def conflict_keys(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> frozenset[str] | None:
        return frozenset(key for key, _ in batch)

    def stage(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> _Staged:
        keys = frozenset(key for key, _ in batch)
        self._note("stage", "begin", keys)
        self._stage_started.set()
        self._note("stage", "end", keys)
        return _Staged(keys, tuple(batch))

    def finish(self, staged: _Staged) -> HandlerResult:
        self._note("write", "begin", staged.keys)
        self._stage_started.clear()
        self._stage_started.wait(1.0)
        if self._fail_once is not None and self._fail_once in staged.keys:
            self._fail_once = None
            self._note("write", "failed", staged.keys)
            raise ConnectionError("the store went away")
        with self._lock:
            self.written.extend(key for key, _ in staged.batch)
        self._note("write", "end", staged.keys)
        return HandlerResult(
            outputs=[
                OutputEvent(CHUNKS_CHANGED, key, ChunksChanged(doc_id=key, version=1, chunk_ids=[]).model_dump())
                for key, _ in staged.batch
            ]
        )

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        return self.finish(self.stage(topic, batch))


class RecordingRunner(ConsumerRunner):
    def __init__(self, *args: object, handler: RecordingHandler, **kwargs: object) -> None:
        super().__init__(handler, *args, **kwargs)  # type: ignore[arg-type]
        self.recorder = handler
        self.commits: list[tuple[list[int], list[str]]] = []  # (offsets, keys written when committed)

    def _committed(self, messages: Sequence[Message]) -> None:
        self.commits.append(([m.offset() or 0 for m in messages], list(self.recorder.written)))


@pytest.fixture
def one_partition() -> Iterator[KgragSettings]:
    tag = uuid.uuid4().hex[:10]
    settings = KgragSettings(
        runtime="distributed",
        kafka_bootstrap=endpoint("kafka"),
        kafka_group_prefix=f"test-{tag}",
        kafka_topic_prefix=f"p{tag}.",
    )
    ensure_topics(settings.kafka_bootstrap or "", partitions=1, replication=1, prefix=settings.kafka_topic_prefix)
    yield settings
    admin = AdminClient({"bootstrap.servers": settings.kafka_bootstrap or ""})
    for future in admin.delete_topics(all_topics(settings.kafka_topic_prefix), operation_timeout=30).values():
        future.result()


def test_batches_overlap_commit_in_order_after_their_writes_and_a_failed_write_goes_first(
    one_partition: KgragSettings,
) -> None:
    send = producer(one_partition, "test")
    for i, key in enumerate(KEYS):
        send.produce_raw(DOCUMENTS_CHANGED, key, json.dumps({"doc_id": key, "n": i}).encode())
    send.flush()
    handler = RecordingHandler()
    runner = RecordingRunner(
        bootstrap=one_partition.kafka_bootstrap or "",
        group_id=group_id(one_partition, "pipe-probe"),
        producer=producer(one_partition, "pipe-probe"),
        settings=RunnerSettings(batch_size=2, poll_timeout_s=0.2, backoff_initial_s=0.1, lag_refresh_s=0.3),
        extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
        handler=handler,
    )
    assert isinstance(handler, StagedHandler)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(
            lambda: sum(len(offsets) for offsets, _ in runner.commits) == len(KEYS),
            timeout_s=90,
            what="every message committed",
        )
        wait_for(lambda: runner.lag_report()["lag_fresh"] is True and runner.lag == 0, timeout_s=30, what="lag 0")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()

    # Every event written: the failed batch's once more (redone), the rest once, in produce order.
    assert handler.written == KEYS
    # Offsets committed in order, each batch only after its own writes (and every write before it).
    committed = [o for offsets, _ in runner.commits for o in offsets]
    assert committed == sorted(committed) == list(range(committed[0], committed[0] + len(KEYS)))
    done = 0
    for offsets, written_then in runner.commits:
        done += len(offsets)
        assert written_then[:done] == KEYS[:done]
    # The write that failed was redone before any later batch was written.
    failed_at = next(i for i, e in enumerate(handler.log) if e[1] == "failed")
    redone_at = next(i for i, e in enumerate(handler.log) if i > failed_at and e[:2] == ("write", "end"))
    assert FAIL_ONCE in handler.log[redone_at][2]
    assert all(e[:2] != ("write", "end") for e in handler.log[failed_at + 1 : redone_at])

    # Batches in consume order (the first stage of each key set; a redo stages again) and where each one's
    # successful write ended in the log.
    first_stage: dict[frozenset[str], int] = {}
    write_end: dict[frozenset[str], int] = {}
    for at, (event, phase, keys) in enumerate(handler.log):
        if (event, phase) == ("stage", "begin"):
            first_stage.setdefault(keys, at)
        elif (event, phase) == ("write", "end"):
            write_end[keys] = at
    batches = sorted(first_stage, key=first_stage.__getitem__)
    # Overlap (the pipeline's point, and the positive control for the check after it): some batch was
    # staged before the write of the batch before it ended.
    assert any(first_stage[b] < write_end[a] for a, b in itertools.pairwise(batches))
    # ...but never a batch sharing a document with an earlier one still being written ("d", "g").
    shared = [(a, b) for i, a in enumerate(batches) for b in batches[i + 1 :] if a & b]
    assert shared, "the key layout no longer makes two batches share a document"
    for a, b in shared:
        assert write_end[a] < first_stage[b], f"staged {sorted(b)} before {sorted(a)} was written"


def test_the_same_batches_run_serially_with_the_pipeline_off(one_partition: KgragSettings) -> None:
    send = producer(one_partition, "test")
    for i, key in enumerate(KEYS[:4]):
        send.produce_raw(DOCUMENTS_CHANGED, key, json.dumps({"doc_id": key, "n": i}).encode())
    send.flush()
    handler = RecordingHandler(fail_once=None)
    runner = RecordingRunner(
        bootstrap=one_partition.kafka_bootstrap or "",
        group_id=group_id(one_partition, "pipe-probe"),
        producer=producer(one_partition, "pipe-probe"),
        settings=RunnerSettings(batch_size=2, poll_timeout_s=0.2, lag_refresh_s=0.3, pipeline=False),
        extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
        handler=handler,
    )
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: sum(len(o) for o, _ in runner.commits) == 4, timeout_s=60, what="4 messages committed")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert handler.written == KEYS[:4]
    # Serial: every stage begins after the write before it ended.
    phases = [(e, p) for e, p, _ in handler.log]
    assert phases == [("stage", "begin"), ("stage", "end"), ("write", "begin"), ("write", "end")] * (len(phases) // 4)
