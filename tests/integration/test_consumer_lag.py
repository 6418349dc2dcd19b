"""Consumer lag against a real broker with a known backlog: log end − committed offset, measured off the
consume loop, and readiness that follows it (issue 16, item 1)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import pytest

from kgrag_core.events import DOCUMENTS_CHANGED, document_changed_from_source
from kgrag_core.handlers.protocol import HandlerResult
from kgrag_runtime.benchmarks.synthetic import synthetic_documents
from kgrag_runtime.distributed import producer
from kgrag_runtime.kafka.runner import ConsumerRunner, RunnerSettings
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import group_id, readiness
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.integration
BACKLOG = 40


class GatedHandler:
    """Takes its first batch, then holds it until released: a worker busy on uncommitted work."""

    name = "lag-probe"
    topics = (DOCUMENTS_CHANGED,)

    def __init__(self) -> None:
        self.release = threading.Event()
        self.holding = threading.Event()
        self.seen = 0

    def handle(self, topic: str, events: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        self.holding.set()
        assert self.release.wait(120), "the test never released the handler"
        self.seen += len(events)
        return HandlerResult()


def _runner(settings: KgragSettings, handler: GatedHandler, **overrides: float) -> ConsumerRunner:
    return ConsumerRunner(
        handler,  # type: ignore[arg-type]
        bootstrap=settings.kafka_bootstrap or "",
        group_id=group_id(settings, "lag-probe"),
        producer=producer(settings, "lag-probe"),
        settings=RunnerSettings(batch_size=8, poll_timeout_s=0.2, lag_refresh_s=0.3, **overrides),
        extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
    )


def _produce_backlog(settings: KgragSettings, n: int) -> None:
    send = producer(settings, "test")
    for doc in synthetic_documents(n, seed=7):
        send.produce(DOCUMENTS_CHANGED, doc.doc_id, document_changed_from_source(doc).model_dump(mode="json"))
    send.flush()


def test_lag_counts_uncommitted_work_and_drains_to_zero(distributed_settings: KgragSettings) -> None:
    _produce_backlog(distributed_settings, BACKLOG)
    handler = GatedHandler()
    runner = _runner(distributed_settings, handler)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert handler.holding.wait(60), "the runner never took a batch"
        # A batch is in hand but not committed: all of it is still lag (the consume position would say
        # BACKLOG - 8, the old cached-watermark metric said 0).
        wait_for(lambda: runner.lag == BACKLOG, timeout_s=30, what=f"lag == {BACKLOG} with a batch in hand")
        report = runner.lag_report()
        assert report["lag_fresh"] is True
        assert report["assigned_partitions"] == distributed_settings.kafka_topic_partitions
        assert runner.metrics.registry.get_sample_value("kgrag_consumer_lag", {"consumer": "lag-probe"}) == BACKLOG
        held = readiness(runner, lambda: None, max_lag=BACKLOG - 1)
        assert held["ok"] is False and held["lag"] == BACKLOG  # over the bound: not ready
        assert readiness(runner, lambda: None, max_lag=BACKLOG)["ok"] is True  # positive control

        projection = {"consumer": "lag-probe"}
        assert runner.metrics.registry.get_sample_value("kgrag_projection_lag_seconds", projection) == 0.0

        handler.release.set()
        wait_for(lambda: handler.seen == BACKLOG, timeout_s=60, what="every message handled")
        wait_for(lambda: runner.lag == 0, timeout_s=30, what="lag back to 0 after the commits")
        # Projection lag: the newest committed event's age at its commit. Every event was produced before the
        # runner started and the first batch was held, so it is positive; and it is seconds, not a timestamp.
        lag_s = runner.metrics.registry.get_sample_value("kgrag_projection_lag_seconds", projection)
        assert lag_s is not None and 0.0 < lag_s < 300.0, lag_s
        assert readiness(runner, lambda: None, max_lag=0)["ok"] is True
    finally:
        handler.release.set()
        stop.set()
        thread.join(timeout=30)


def test_an_unreachable_broker_is_not_ready_and_never_reports_lag_zero(distributed_settings: KgragSettings) -> None:
    # Nothing listens on port 9 here: every request to the broker fails, as during an outage.
    down = distributed_settings.model_copy(update={"kafka_bootstrap": "127.0.0.1:9"})
    runner = _runner(down, GatedHandler(), lag_stale_after_s=2.0)
    runner.subscribe()
    try:
        wait_for(lambda: runner.lag_monitor.reading.error is not None, timeout_s=30, what="a failed lag refresh")
        report = readiness(runner, lambda: None, max_lag=10_000)
        assert report["ok"] is False
        assert report["lag_fresh"] is False
        assert report["lag_age_s"] is None  # never measured: no number to trust, so none is offered as 0
        assert "broker_error" in report
    finally:
        runner.close()
        runner.producer.close()  # not the runner's to close; left to the collector it reconnects to port 9 meanwhile
    # Positive control: the same runner settings against the real broker become ready.
    live = _runner(distributed_settings, GatedHandler(), lag_stale_after_s=2.0)
    live.subscribe()
    try:
        wait_for(lambda: readiness(live, lambda: None, max_lag=10_000)["ok"] is True, timeout_s=30, what="ready")
    finally:
        live.close()
        live.producer.close()
