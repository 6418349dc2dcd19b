"""`python -m kgrag_runtime.admin`: operate the distributed runtime.

init                          apply migrations, create topics, index templates, collections, constraints
rebuild --projection NAME     rewrite a projection (qdrant, opensearch, neo4j, all) from PostgreSQL alone
rotate-keys                   re-wrap every document data key under the primary KEK (ADR 0008); also
                              embedded: it uses KGRAG_PG_DSN, else <data_dir>/postgres (stop kgrag first)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from kgrag_runtime.distributed import open_stores, require
from kgrag_runtime.kafka.topics import ensure_topics
from kgrag_runtime.settings import KgragSettings

BATCH = 200


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m kgrag_runtime.admin", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("init", help="create everything the services expect (idempotent)")
    rebuild = sub.add_parser("rebuild", help="rewrite a projection from PostgreSQL")
    rebuild.add_argument("--projection", choices=["qdrant", "opensearch", "neo4j", "all"], default="all")
    sub.add_parser("rotate-keys", help="re-wrap data keys under the primary key-encryption key")
    args = parser.parse_args(argv)
    settings = KgragSettings()
    if args.command == "rotate-keys":
        from kgrag_runtime.keys import rotate_keys

        report = rotate_keys(settings)
    elif args.command == "init":
        report = init(settings)
    else:
        report = rebuild_projection(settings, args.projection)
    json.dump(report, sys.stdout, indent=2)
    print()


def init(settings: KgragSettings) -> dict[str, object]:
    created = ensure_topics(
        require(settings.kafka_bootstrap, "KGRAG_KAFKA_BOOTSTRAP"),
        partitions=settings.kafka_topic_partitions,
        replication=settings.kafka_replication_factor,
        prefix=settings.kafka_topic_prefix,
    )
    # Connecting applies migrations, the index template, the collection schema.
    with open_stores(settings) as stores:
        stats = stores.store.stats()
    graph = _neo4j(settings)
    graph.close()
    return {"topics_created": created, "documents": stats.documents, "neo4j": "constraints applied"}


def rebuild_projection(settings: KgragSettings, projection: str) -> dict[str, object]:
    from kgrag_core.handlers.graph_writer import GraphWriterHandler

    with open_stores(settings) as stores:
        doc_ids = [d.doc_id for d in stores.store.list_documents()]
        written = 0
        if projection in ("qdrant", "opensearch", "all"):
            indexer = stores.indexer(settings)
            for start in range(0, len(doc_ids), BATCH):
                written += indexer.reproject(
                    doc_ids[start : start + BATCH],
                    vectors=projection in ("qdrant", "all"),
                    keywords=projection in ("opensearch", "all"),
                )
        if projection in ("neo4j", "all"):
            graph = _neo4j(settings)
            writer = GraphWriterHandler(stores.store, graph)
            for doc_id in doc_ids:
                writer.sync(doc_id)
            graph.close()
    return {"projection": projection, "documents": len(doc_ids), "chunks_written": written}


def _neo4j(settings: KgragSettings):  # type: ignore[no-untyped-def]
    from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph

    return Neo4jLexicalGraph.connect(
        require(settings.neo4j_uri, "KGRAG_NEO4J_URI"),
        user=settings.neo4j_user,
        password=settings.neo4j_password.get_secret_value() if settings.neo4j_password else None,
    )


if __name__ == "__main__":
    main()
