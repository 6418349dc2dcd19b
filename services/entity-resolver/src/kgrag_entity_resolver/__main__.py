"""`python -m kgrag_entity_resolver`: entity resolution after every extraction (settings from KGRAG_*)."""

from kgrag_core.handlers.protocol import Handler
from kgrag_runtime.distributed import DistributedStores
from kgrag_runtime.graph import build_resolution, build_resolver_handler
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import run_worker

SERVICE = "entity-resolver"


def main() -> None:
    settings = KgragSettings()

    def build(stores: DistributedStores) -> Handler:
        return build_resolver_handler(
            settings, build_resolution(settings, store=stores.store, embedder=stores.embedder), name=SERVICE
        )

    run_worker(SERVICE, build, settings)


if __name__ == "__main__":
    main()
