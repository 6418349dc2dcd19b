"""Prometheus metrics of one consumer process (its own registry: no process-global state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass
class RunnerMetrics:
    consumer: str
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        labels = ["consumer"]
        self.processed = Counter(
            "kgrag_events_processed", "Events handled and committed.", labels, registry=self.registry
        ).labels(self.consumer)
        self.failed = Counter(
            "kgrag_events_failed", "Events rejected with an error code.", labels, registry=self.registry
        ).labels(self.consumer)
        self.dlq = Counter("kgrag_dlq", "Events sent to the dead-letter topic.", labels, registry=self.registry).labels(
            self.consumer
        )
        self.retries = Counter(
            "kgrag_handler_retries", "Batches retried after a handler failure.", labels, registry=self.registry
        ).labels(self.consumer)
        self.lag = Gauge(
            "kgrag_consumer_lag", "Messages behind the end of the assigned partitions.", labels, registry=self.registry
        ).labels(self.consumer)
        # Freshness of what this consumer projects: broker timestamp of the newest event it committed, to
        # the commit. Consumer lag counts messages; this says how far behind in time the projection is.
        self.projection_lag_seconds = Gauge(
            "kgrag_projection_lag_seconds",
            "Seconds from an event reaching the broker to its commit here (newest event of the last batch).",
            labels,
            registry=self.registry,
        ).labels(self.consumer)
        self.handle_seconds = Histogram(
            "kgrag_handle_seconds", "Time to handle and commit one batch.", labels, registry=self.registry
        ).labels(self.consumer)
