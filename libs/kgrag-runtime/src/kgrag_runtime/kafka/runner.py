"""Run a handler on Kafka with at-least-once delivery and exactly-once effect.

Per batch: decode → handle (the handler writes its sinks and returns) → produce outputs and dead
letters → flush the producer → commit the consumed offsets. A crash anywhere before the commit
replays the batch, and the handlers' deterministic IDs and idempotent upserts make the replay change
nothing. A message that cannot be decoded or validated goes to `<consumer>.dlq` with its error code,
and the partition moves on. A handler exception means a store is failing: the runner pauses its
partitions (so the broker stops feeding it), backs off, and retries the same batch until it succeeds.

A handler that stages (`StagedHandler`: the chunk-indexer) runs one batch deep in a pipeline: batch N+1 is
staged (embedded) on the consume thread while batch N's writes run on a writer thread, so the model never
waits on OpenSearch, S3 or PostgreSQL. Offsets are still committed in order and only after a batch's writes;
a batch that shares a document with the one in flight, or that the handler cannot stage, waits for it; a
failed write is retried on its own, as above, before anything after it; a rebalance first settles the batch
in flight.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, KafkaException, Message, TopicPartition

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.handlers.protocol import Handler, HandlerResult, StagedHandler
from kgrag_core.ingest import IngestOutcome, IngestStatus
from kgrag_core.ports import IngestLog
from kgrag_runtime.kafka.codec import dead_letter_topic, decode
from kgrag_runtime.kafka.lag import LagMonitor, LagReading
from kgrag_runtime.kafka.metrics import RunnerMetrics
from kgrag_runtime.kafka.producer import EventProducer

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunnerSettings:
    batch_size: int = 64
    poll_timeout_s: float = 0.5
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 10.0
    unhealthy_after_attempts: int = 5
    lag_refresh_s: float = 5.0
    # A lag reading older than this, or a failed last refresh, means the broker is not answering.
    lag_stale_after_s: float = 15.0
    # Stage the next batch while this one's writes run, for handlers that can (see the module docstring).
    pipeline: bool = True


class ConsumerRunner:
    def __init__(
        self,
        handler: Handler,
        *,
        bootstrap: str,
        group_id: str,
        producer: EventProducer,
        settings: RunnerSettings | None = None,
        metrics: RunnerMetrics | None = None,
        extra_config: Mapping[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        outcome_log: IngestLog | None = None,
    ) -> None:
        self.handler = handler
        # Where every document's outcome is recorded (PostgreSQL's ingest log), as the embedded bus does.
        self.outcome_log = outcome_log
        self.settings = settings or RunnerSettings()
        self.metrics = metrics or RunnerMetrics(handler.name)
        self.producer = producer
        self.dlq_topic = dead_letter_topic(handler.name)
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky",
            "max.poll.interval.ms": 600_000,
        }
        config.update(extra_config or {})
        self._consumer = Consumer(config)
        self._sleep = sleep
        self._failing_attempts = 0
        self._last_loop = time.monotonic()
        self._subscribed = False
        self._closing = threading.Event()
        self._inflight: _InFlight | None = None
        self._retry_first: list[Message] = []  # a failed in-flight batch a rebalance left to redo
        self._writer: ThreadPoolExecutor | None = None
        # A batch left uncommitted because the runner is stopping: nothing after it may commit.
        self._abandoned = False
        self.lag_monitor = LagMonitor(
            bootstrap,
            group_id,
            interval_s=self.settings.lag_refresh_s,
            request_timeout_s=min(5.0, self.settings.lag_stale_after_s / 2),
            extra_config=extra_config,
            on_reading=lambda reading: self.metrics.lag.set(reading.total),
        )

    # --- lifecycle -------------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                self.step(stop)
        finally:
            self.close()

    def close(self) -> None:
        """Commit the batch in flight if its writes succeed, leave the group and stop measuring lag."""
        try:
            self._settle(retry=False)
        finally:
            if self._writer is not None:
                self._writer.shutdown(wait=True)
                self._writer = None
        self._closing.set()
        self.lag_monitor.join()
        self._consumer.close()

    def subscribe(self) -> None:
        """Join the group once; the lag monitor learns the assignment from the rebalance callbacks."""
        if self._subscribed:
            return
        monitor = self.lag_monitor

        def on_assign(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            monitor.assigned(partitions)

        def on_revoke(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            self._settle_before_revoke(partitions, lost=False)
            monitor.revoked(partitions)

        def on_lost(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
            self._settle_before_revoke(partitions, lost=True)
            monitor.revoked(partitions)

        self._consumer.subscribe(
            [self.producer.topic_prefix + t for t in self.handler.topics],
            on_assign=on_assign,
            on_revoke=on_revoke,
            on_lost=on_lost,
        )
        self._subscribed = True
        monitor.start(self._closing)

    def step(self, stop: threading.Event | None = None) -> int:
        """Consume, handle and commit at most one batch; return how many messages it held."""
        self.subscribe()
        self._last_loop = time.monotonic()
        messages = self._consumer.consume(self.settings.batch_size, self.settings.poll_timeout_s)
        messages = [m for m in messages if not self._is_partition_eof(m)]
        if self._retry_first:
            # A rebalance found the batch in flight failed: it goes first, alone, on what we still own.
            owned = {(tp.topic, tp.partition) for tp in self._consumer.assignment()}
            redo = [m for m in self._retry_first if (m.topic(), m.partition()) in owned]
            self._retry_first = []
            if redo:
                self._process_with_backoff(redo, stop)
        if not messages:
            self._settle(stop=stop)  # idle: commit the batch in flight now rather than behind the next poll
            return 0
        started = time.perf_counter()
        if self._abandoned or self._pipelined(messages, stop, started):
            return len(messages)
        self._settle(stop=stop)
        if not self._abandoned:
            self._process_with_backoff(messages, stop)
            self.metrics.handle_seconds.observe(time.perf_counter() - started)
        return len(messages)

    @property
    def healthy(self) -> bool:
        """Alive and not stuck retrying a failing store (the readiness probe reports this)."""
        return self._failing_attempts < self.settings.unhealthy_after_attempts

    @property
    def seconds_since_last_loop(self) -> float:
        return time.monotonic() - self._last_loop

    @property
    def lag(self) -> float:
        """Committed lag (log end − committed offset) of the assigned partitions, at the last reading."""
        return float(self.lag_monitor.reading.total)

    def lag_report(self) -> dict[str, object]:
        """What readiness needs: the lag, how old the reading is, and whether the broker still answers."""
        reading: LagReading = self.lag_monitor.reading
        age = reading.age_s(time.monotonic())
        fresh = reading.error is None and age is not None and age <= self.settings.lag_stale_after_s
        return {
            "lag": reading.total,
            "lag_age_s": None if age is None else round(age, 1),
            "lag_fresh": fresh,
            "assigned_partitions": len(self.lag_monitor.partitions),
            **({"broker_error": reading.error} if reading.error else {}),
        }

    # --- one batch deep: stage N+1 while N writes ---------------------------------------------------------

    def _pipelined(self, messages: list[Message], stop: threading.Event | None, started: float) -> bool:
        """Stage this batch and hand its writes to the writer thread; False when it must run serially."""
        handler = self.handler
        if not self.settings.pipeline or not isinstance(handler, StagedHandler):
            return False
        runs = _consecutive_by_topic(messages, self.producer.topic_prefix)
        if len(runs) != 1:
            return False
        topic = runs[0][0]
        batch, origin, undecodable = self._decode(runs[0][1])
        keys = handler.conflict_keys(topic, batch) if batch else frozenset[str]()
        if keys is None:
            return False
        if self._inflight is not None and keys & self._inflight.keys:
            self._settle(stop=stop)  # staging reads what the batch in flight writes
            if self._abandoned:
                return True
        try:
            staged = handler.stage(topic, batch) if batch else None
        except Exception as err:  # noqa: BLE001 - a failing store: the serial path retries with backoff
            log.warning("handler %s failed to stage a batch, running it serially: %s", handler.name, err)
            return False
        if not self._settle(stop=stop):
            return self._abandoned  # the batch before failed and was redone alone; this one follows it
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{handler.name}-writer")
        future: Future[HandlerResult] | None = (
            self._writer.submit(handler.finish, staged) if staged is not None else None
        )
        self._inflight = _InFlight(messages, origin, undecodable, keys, future, started)
        return True

    def _settle(self, *, stop: threading.Event | None = None, retry: bool = True) -> bool:
        """Wait for the batch in flight; emit and commit it. True if it succeeded; a failure is retried
        alone (serially, with backoff) when `retry`, else left uncommitted for redelivery."""
        inflight, self._inflight = self._inflight, None
        if inflight is None:
            return True
        try:
            result = inflight.future.result() if inflight.future is not None else HandlerResult()
            self._commit_inflight(inflight, result)
        except Exception as err:  # noqa: BLE001 - as in _process_with_backoff: a sink or the broker failing
            self._failing_attempts += 1  # a failed write is an attempt, for readiness as on the serial path
            self.metrics.retries.inc()
            log.warning("handler %s failed writing a staged batch: %s", self.handler.name, err)
            if retry:
                self._process_with_backoff(inflight.messages, stop)
            return False
        self._failing_attempts = 0
        self.metrics.handle_seconds.observe(time.perf_counter() - inflight.started)
        return True

    def _commit_inflight(self, inflight: _InFlight, result: HandlerResult) -> None:
        for message, code, reason in inflight.undecodable:
            self._dead_letter_raw(message, code, reason)
        self._emit(result, inflight.origin)
        self._finish_batch(inflight.messages)

    def _settle_before_revoke(self, partitions: list[TopicPartition], *, lost: bool) -> None:
        """Before partitions go: commit the batch in flight (its writes are done or nearly); a lost
        assignment cannot commit, so its batch is redelivered to the next owner."""
        inflight, self._inflight = self._inflight, None
        if inflight is None:
            return
        try:
            result = inflight.future.result() if inflight.future is not None else HandlerResult()
            if not lost:
                self._commit_inflight(inflight, result)
                self.metrics.handle_seconds.observe(time.perf_counter() - inflight.started)
        except Exception as err:  # noqa: BLE001 - redone below, on the partitions this consumer keeps
            self._failing_attempts += 1
            self.metrics.retries.inc()
            log.warning("handler %s failed writing a staged batch before a rebalance: %s", self.handler.name, err)
            if not lost:
                going = {(tp.topic, tp.partition) for tp in partitions}
                self._retry_first = [m for m in inflight.messages if (m.topic(), m.partition()) not in going]

    def _decode(
        self, messages: Sequence[Message]
    ) -> tuple[list[tuple[str, Mapping[str, object]]], _Origins, list[tuple[Message, str, str]]]:
        batch: list[tuple[str, Mapping[str, object]]] = []
        origin = _Origins()
        undecodable: list[tuple[Message, str, str]] = []
        for message in messages:
            key = (message.key() or b"").decode("utf-8", "replace")
            try:
                payload = decode(message.value())
            except KgragError as err:
                undecodable.append((message, err.code.value, err.message))
                continue
            batch.append((key, payload))
            origin.add(key, payload, message)
        return batch, origin, undecodable

    # --- one batch ---------------------------------------------------------------------------------------

    def _process_with_backoff(self, messages: list[Message], stop: threading.Event | None) -> None:
        """Handle and commit `messages`, retrying until it succeeds or `stop` is set (then abandoned)."""
        delay = self.settings.backoff_initial_s
        paused: list[TopicPartition] = []
        while True:
            try:
                self._process(messages)
                self._failing_attempts = 0
                break
            except Exception as err:  # noqa: BLE001
                # Broad on purpose: every driver has its own exception tree, and any failure here is a
                # sink or the broker failing, never bad input (bad input was dead-lettered per event).
                # Nothing was committed, so retrying the same batch is safe.
                self._failing_attempts += 1
                self.metrics.retries.inc()
                log.warning(
                    "handler %s failed (attempt %d), retrying in %.1fs: %s",
                    self.handler.name,
                    self._failing_attempts,
                    delay,
                    err,
                )
                if not paused:
                    paused = self._consumer.assignment()
                    self._consumer.pause(paused)
                self._wait(delay)
                delay = min(delay * 2, self.settings.backoff_max_s)
                if stop is not None and stop.is_set():
                    # Leave without committing: the batch is redelivered to whoever owns it next.
                    self._abandoned = True
                    return
        if paused:
            self._consumer.resume(paused)

    def _wait(self, seconds: float) -> None:
        """Sleep while still serving the group protocol (a paused consumer's poll returns nothing)."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._consumer.poll(min(remaining, 0.5))

    def _process(self, messages: Sequence[Message]) -> None:
        for topic, group in _consecutive_by_topic(messages, self.producer.topic_prefix):
            batch, origin, undecodable = self._decode(group)
            for message, code, reason in undecodable:
                self._dead_letter_raw(message, code, reason)
            if batch:
                result = self.handler.handle(topic, batch)
                self._emit(result, origin)
        self._finish_batch(messages)

    def _finish_batch(self, messages: Sequence[Message]) -> None:
        """Outputs delivered, then the offsets: the batch is done."""
        self.producer.flush()
        self._consumer.commit(offsets=_next_offsets(messages), asynchronous=False)
        self.metrics.processed.inc(len(messages))
        newest_ms = max((ms for ms in map(_broker_ms, messages) if ms is not None), default=None)
        if newest_ms is not None:
            self.metrics.projection_lag_seconds.set(max(0.0, time.time() - newest_ms / 1000))
        self._committed(messages)

    def _committed(self, messages: Sequence[Message]) -> None:
        """Called after each batch's offsets are committed (a hook for benchmarks and tests)."""

    def _emit(self, result: HandlerResult, origin: _Origins) -> None:
        for out in result.outputs:
            self.producer.produce(out.topic, out.key, out.payload)
        dead_lettered: set[str] = set()
        for dead in result.dead_letters:
            message = origin.find(dead.key, dead.payload)
            dead_lettered.add(dead.key)
            if message is not None:
                self._dead_letter_raw(message, dead.error_code, dead.reason, counted=False)
            else:  # not from this batch (a handler's own finding): the payload is all there is
                self.producer.produce_raw(
                    self.dlq_topic,
                    dead.key,
                    _json_bytes(dead.payload),
                    {"error_code": dead.error_code, "reason": dead.reason[:1000]},
                )
                self.metrics.dlq.inc()
        # A record the handler rejected by outcome (bad bytes inside a valid event, say) is a rejected
        # record all the same: its original message goes to the DLQ too, so every rejection is visible.
        for outcome in result.outcomes:
            if not _is_rejection(outcome) or outcome.doc_id in dead_lettered:
                continue
            message = origin.by_key.get(outcome.doc_id)
            if message is not None:
                dead_lettered.add(outcome.doc_id)
                self._dead_letter_raw(message, str(outcome.error_code), outcome.message or "rejected", counted=False)
        if result.outcomes and self.outcome_log is not None:
            self.outcome_log.record_outcomes(result.outcomes)
        self.metrics.failed.inc(sum(1 for o in result.outcomes if o.error_code is not None))

    def _dead_letter_raw(self, message: Message, code: str, reason: str, *, counted: bool = True) -> None:
        """The original bytes, key and coordinates of `message` onto the DLQ with a stable error code.
        `counted`: also count it as a failed event (handler rejections are counted from their outcomes)."""
        key = message.key()
        headers = {
            "error_code": code,
            "reason": reason[:1000],
            "source_topic": message.topic() or "",
            "source_partition": str(message.partition()),
            "source_offset": str(message.offset()),
        }
        self.producer.produce_raw(
            self.dlq_topic, key.decode("utf-8", "replace") if key else None, message.value(), headers
        )
        self.metrics.dlq.inc()
        if counted:
            self.metrics.failed.inc()

    # --- bookkeeping -----------------------------------------------------------------------------------

    @staticmethod
    def _is_partition_eof(message: Message) -> bool:
        """True for events that carry no record: end-of-partition and transient client errors.

        librdkafka reconnects and retries by itself after a transient error (a broker restart shows up
        here), so such a message is logged and skipped; only a fatal error stops the consumer.
        """
        err = message.error()
        if err is None:
            return False
        if err.code() == KafkaError._PARTITION_EOF:
            return True
        if err.fatal():
            raise KafkaException(err)
        log.warning("transient Kafka error, continuing: %s", err)
        return True


@dataclass(slots=True)
class _InFlight:
    """A staged batch whose writes run on the writer thread; committed by `_settle`."""

    messages: list[Message]
    origin: _Origins
    undecodable: list[tuple[Message, str, str]]
    keys: frozenset[str]
    future: Future[HandlerResult] | None  # None: nothing decodable to write
    started: float


class _Origins:
    """Which consumed message each decoded payload came from: by identity (handlers hand back the payload
    object they were given) and, for outcomes that only name a document, by key (the document ID)."""

    def __init__(self) -> None:
        self.by_payload: dict[int, Message] = {}
        self.by_key: dict[str, Message] = {}

    def add(self, key: str, payload: Mapping[str, object], message: Message) -> None:
        self.by_payload[id(payload)] = message
        self.by_key[key] = message

    def find(self, key: str, payload: Mapping[str, object]) -> Message | None:
        return self.by_payload.get(id(payload)) or self.by_key.get(key)


def _is_rejection(outcome: IngestOutcome) -> bool:
    # A delete of an unknown document is an answer, not a bad record.
    return (
        outcome.status is IngestStatus.REJECTED
        and outcome.error_code is not None
        and outcome.error_code is not ErrorCode.DOCUMENT_NOT_FOUND
    )


def _consecutive_by_topic(messages: Sequence[Message], prefix: str) -> list[tuple[str, list[Message]]]:
    """Split into runs of one topic (named without the environment prefix), keeping partition order."""
    runs: list[tuple[str, list[Message]]] = []
    for message in messages:
        topic = (message.topic() or "").removeprefix(prefix)
        if runs and runs[-1][0] == topic:
            runs[-1][1].append(message)
        else:
            runs.append((topic, [message]))
    return runs


def _next_offsets(messages: Sequence[Message]) -> list[TopicPartition]:
    last: dict[tuple[str, int], int] = {}
    for m in messages:
        key = (m.topic() or "", m.partition() or 0)
        last[key] = max(last.get(key, -1), m.offset() or 0)
    return [TopicPartition(t, p, o + 1) for (t, p), o in sorted(last.items())]


def _broker_ms(message: Message) -> float | None:
    """The message's timestamp in ms (producer create time or broker log-append time), if it has one."""
    kind, ms = message.timestamp()
    return float(ms) if kind != TIMESTAMP_NOT_AVAILABLE and ms > 0 else None


def _json_bytes(payload: Mapping[str, object]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), sort_keys=True, default=str).encode("utf-8")
