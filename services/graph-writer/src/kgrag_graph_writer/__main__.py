"""`python -m kgrag_graph_writer`: project PostgreSQL's documents and chunks into Neo4j (settings from KGRAG_*)."""

from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
from kgrag_core.handlers.graph_writer import GraphWriterHandler
from kgrag_core.handlers.protocol import Handler
from kgrag_runtime.distributed import DistributedStores, require
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import run_worker

SERVICE = "graph-writer"


def main() -> None:
    settings = KgragSettings()

    def build(stores: DistributedStores) -> Handler:
        graph = Neo4jLexicalGraph.connect(
            require(settings.neo4j_uri, "KGRAG_NEO4J_URI"), user=settings.neo4j_user,
            password=settings.neo4j_password.get_secret_value() if settings.neo4j_password else None,
        )
        return GraphWriterHandler(stores.store, graph, name=SERVICE)

    run_worker(SERVICE, build, settings)


if __name__ == "__main__":
    main()
