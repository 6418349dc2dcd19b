"""Wiring of communities: the service over PostgreSQL and Leiden, its handler, and its metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgrag_core.communities.building import BuildSettings
from kgrag_core.communities.model import BuildReport
from kgrag_core.communities.service import CommunityService
from kgrag_runtime.settings import KgragSettings

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kgrag_adapters.postgres.pool import ConnectionPool
    from kgrag_core.handlers.community_builder import CommunityBuilderHandler


def build_communities(settings: KgragSettings, pool: ConnectionPool) -> CommunityService:
    from kgrag_adapters.communities.leiden import LeidenDetector
    from kgrag_adapters.postgres.communities import PostgresCommunityStore

    store = PostgresCommunityStore(pool)
    build = BuildSettings(
        seed=settings.communities_seed,
        max_levels=settings.communities_max_levels,
        split_above=settings.communities_split_above,
    )
    return CommunityService(store, store, LeidenDetector(), build)


def build_community_handler(
    settings: KgragSettings,
    service: CommunityService,
    *,
    name: str = "community-builder",
    metrics: CommunityMetrics | None = None,
) -> CommunityBuilderHandler:
    from kgrag_core.handlers.community_builder import CommunityBuilderHandler

    every = settings.communities_rebuild_every_s
    return CommunityBuilderHandler(
        service,
        name=name,
        full_rebuild_every_s=every if every > 0 else None,
        on_report=metrics.observe if metrics is not None else None,
    )


class CommunityMetrics:
    """The community-builder's own metrics, on the registry its ops port serves."""

    def __init__(self, registry: CollectorRegistry, service: CommunityService) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self._service = service
        self.build_seconds = Histogram(
            "kgrag_community_build_seconds", "Time of one community build (full or incremental).", ["kind"],
            registry=registry,
        )  # fmt: skip
        self.written = Counter("kgrag_community_written", "Communities written by builds.", ["kind"], registry=registry)
        self.communities = Gauge("kgrag_communities", "Communities stored, every level.", registry=registry)
        self.stale = Gauge(
            "kgrag_communities_stale", "Communities marked stale, not yet reclustered.", registry=registry
        )

    def observe(self, report: BuildReport) -> None:
        kind = "full" if report.full else "incremental"
        self.build_seconds.labels(kind).observe(report.seconds)
        self.written.labels(kind).inc(report.communities_written)
        counts = self._service.store.counts()
        self.communities.set(counts["communities"])
        self.stale.set(counts["stale"])
