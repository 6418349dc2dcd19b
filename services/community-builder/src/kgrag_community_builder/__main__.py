"""`python -m kgrag_community_builder`: after resolution, recluster only the communities a change touched
(graph.changed, entities.changed; settings from KGRAG_*). Its metrics (build seconds, communities, stale
communities) are served on the ops port's /metrics with the runner's. With KGRAG_NEO4J_URI, every batch then
syncs the communities' Neo4j projection from PostgreSQL (kgrag_core.handlers.community_projection)."""

from kgrag_core.handlers.protocol import Handler
from kgrag_runtime.communities import CommunityMetrics, build_communities, build_community_handler
from kgrag_runtime.distributed import DistributedStores
from kgrag_runtime.graph_projections import with_community_projection
from kgrag_runtime.kafka.metrics import RunnerMetrics
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import run_worker

SERVICE = "community-builder"


def main() -> None:
    settings = KgragSettings()
    metrics = RunnerMetrics(SERVICE)

    def build(stores: DistributedStores) -> Handler:
        service = build_communities(settings, stores.store.pool)
        own = CommunityMetrics(metrics.registry, service)
        handler = build_community_handler(settings, service, name=SERVICE, metrics=own)
        return with_community_projection(settings, handler, stores.store.pool)

    run_worker(SERVICE, build, settings, metrics=metrics)


if __name__ == "__main__":
    main()
