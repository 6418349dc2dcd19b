"""A worker process of the distributed runtime: one handler, one consumer group, an ops endpoint."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

from kgrag_core.handlers.protocol import Handler
from kgrag_runtime.distributed import DistributedStores, open_stores, producer
from kgrag_runtime.kafka.metrics import RunnerMetrics
from kgrag_runtime.kafka.runner import ConsumerRunner, RunnerSettings
from kgrag_runtime.ops_server import OpsServer
from kgrag_runtime.settings import KgragSettings

log = logging.getLogger(__name__)
LIVENESS_STALL_S = 120.0


def group_id(settings: KgragSettings, service: str) -> str:
    return f"{settings.kafka_group_prefix}.{service}"


def run_worker(
    service: str,
    build_handler: Callable[[DistributedStores], Handler],
    settings: KgragSettings | None = None,
    *,
    stop: threading.Event | None = None,
    metrics: RunnerMetrics | None = None,
) -> None:
    """Consume until SIGTERM/SIGINT (or `stop`), then finish the batch in hand and leave the group.
    `metrics`: the runner's metrics, when the service adds its own to the same registry (the extractor)."""
    cfg = settings or KgragSettings()
    stop = stop or _stop_on_signals()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    with open_stores(cfg) as stores:
        handler = build_handler(stores)
        runner = ConsumerRunner(
            handler,
            bootstrap=cfg.kafka_bootstrap or "",
            group_id=group_id(cfg, service),
            producer=producer(cfg, service),
            # One knob for batch size on both runtimes: events per handler call.
            settings=RunnerSettings(batch_size=cfg.ingest_batch_documents),
            # Every document's outcome lands in PostgreSQL's ingest log, as on the embedded runtime.
            outcome_log=stores.store,
            metrics=metrics,
        )

        def live() -> dict[str, object]:
            stalled = runner.seconds_since_last_loop
            return {"ok": stalled < LIVENESS_STALL_S, "seconds_since_last_loop": round(stalled, 1)}

        def ready() -> dict[str, object]:
            return readiness(runner, stores.store.stats, max_lag=cfg.ready_max_lag)

        ops = OpsServer(cfg.ops_host, cfg.ops_port, live=live, ready=ready, registry=runner.metrics.registry)
        ops.start()
        log.info(
            "%s consuming %s as %s; ops on %s:%d",
            service,
            handler.topics,
            group_id(cfg, service),
            cfg.ops_host,
            ops.port,
        )
        try:
            runner.run(stop)
        finally:
            ops.stop()


def readiness(runner: ConsumerRunner, store_answers: Callable[[], object], *, max_lag: int) -> dict[str, object]:
    """Ready = the stores answer, the broker answers (a fresh lag reading) and the consumer keeps up."""
    started = time.perf_counter()
    store_answers()  # raises when PostgreSQL does not answer: the ops server reports that as not ready
    lag = runner.lag_report()
    return {
        "ok": runner.healthy and bool(lag["lag_fresh"]) and runner.lag <= max_lag,
        **lag,
        "max_lag": max_lag,
        "retrying_a_failing_store": not runner.healthy,
        "check_ms": round((time.perf_counter() - started) * 1000, 1),
    }


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()

    def _handler(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping after the current batch", signum)
        stop.set()

    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, _handler)
    return stop
