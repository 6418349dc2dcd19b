"""`python -m kgrag_graph_writer`: project PostgreSQL into Neo4j (settings from KGRAG_*).

Projections on one driver: the lexical graph (documents, chunks), the knowledge graph (canonical entities,
edges and claims with their evidence's reach) and, with KGRAG_TEXT_GRAPH, the text graph (passages, nodes and
their weighted edges, on graph.changed). Each re-reads PostgreSQL on every event, so replays and late events
converge. (The communities are projected by the community-builder, their only writer.)
"""

from kgrag_adapters.postgres.knowledge_source import PostgresKnowledgeSource
from kgrag_core.events import CHUNKS_CHANGED, ENTITIES_CHANGED, GRAPH_CHANGED
from kgrag_core.handlers.composite import CompositeHandler
from kgrag_core.handlers.graph_writer import GraphWriterHandler
from kgrag_core.handlers.knowledge_projection import KnowledgeProjectionHandler
from kgrag_core.handlers.protocol import Handler
from kgrag_runtime.distributed import DistributedStores, connect_neo4j, knowledge_graph_on, require
from kgrag_runtime.graph_projections import text_graph_projection
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_key_ring
from kgrag_runtime.worker import run_worker

SERVICE = "graph-writer"


def main() -> None:
    settings = KgragSettings()

    def build(stores: DistributedStores) -> Handler:
        graph = connect_neo4j(settings)  # the deployment's database and namespace
        source = PostgresKnowledgeSource.connect(
            require(settings.pg_dsn.get_secret_value() if settings.pg_dsn else None, "KGRAG_PG_DSN"),
            kek=build_key_ring(settings),
        )
        # The projection holds names, values and quotes sealed under their documents' keys and looks names
        # up by blind index (ADR 0008, "Names"): a deletion leaves Neo4j nothing readable.
        knowledge = knowledge_graph_on(graph, cipher=source.cipher, name_index=source.name_index)
        parts: list[Handler] = [
            GraphWriterHandler(stores.store, graph, name=SERVICE),
            KnowledgeProjectionHandler(source, knowledge, topics=(CHUNKS_CHANGED, GRAPH_CHANGED, ENTITIES_CHANGED)),
        ]
        if (text_graph := text_graph_projection(settings, graph, stores.store.pool)) is not None:
            parts.append(text_graph)
        return CompositeHandler(SERVICE, parts)

    run_worker(SERVICE, build, settings)


if __name__ == "__main__":
    main()
