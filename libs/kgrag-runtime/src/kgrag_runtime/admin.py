"""`python -m kgrag_runtime.admin`: operate the distributed runtime.

init                          apply migrations, create topics, index templates, collections, constraints
rebuild --projection NAME     rewrite a projection (qdrant, opensearch, neo4j, all) from PostgreSQL alone
dlq CONSUMER [--replay]       list a consumer's dead letters; --replay re-submits them to their source topics
rotate-keys                   re-wrap every document data key under the primary KEK (ADR 0008); also
                              embedded: it uses KGRAG_PG_DSN, else <data_dir>/postgres (stop kgrag first)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import ValidationError

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.distributed import open_stores, require
from kgrag_runtime.kafka.topics import ensure_topics
from kgrag_runtime.settings import KgragSettings

if TYPE_CHECKING:
    from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph

BATCH = 200


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m kgrag_runtime.admin", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("init", help="create everything the services expect (idempotent)")
    rebuild = sub.add_parser("rebuild", help="rewrite a projection from PostgreSQL")
    rebuild.add_argument("--projection", choices=["qdrant", "opensearch", "neo4j", "all"], default="all")
    dlq = sub.add_parser("dlq", help="list (or --replay) the dead letters of one consumer, e.g. chunk-indexer")
    dlq.add_argument("consumer", help="the consumer whose <prefix><consumer>.dlq topic to read")
    dlq.add_argument("--replay", action="store_true", help="re-submit every record to its source topic")
    dlq.add_argument("--limit", type=int, default=10_000, help="records at most (default 10000)")
    sub.add_parser("rotate-keys", help="re-wrap data keys under the primary key-encryption key")
    args = parser.parse_args(argv)
    try:
        settings = KgragSettings()
        if args.command == "rotate-keys":
            from kgrag_runtime.keys import rotate_keys

            report = rotate_keys(settings)
        elif args.command == "init":
            report = init(settings)
        elif args.command == "rebuild":
            report = rebuild_projection(settings, args.projection)
        else:
            report = dead_letters(settings, args.consumer, replay=args.replay, limit=args.limit)
    except KgragError as err:
        # A stable code and what to do next, never a driver's traceback.
        json.dump({"error": err.as_dict()}, sys.stderr, indent=2)
        print(file=sys.stderr)
        raise SystemExit(2) from None
    except ValidationError as err:
        problem = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()[:5])
        bad = KgragError(ErrorCode.CONFIGURATION_INVALID, problem, hint="See docs/configuration.md.")
        json.dump({"error": bad.as_dict()}, sys.stderr, indent=2)
        print(file=sys.stderr)
        raise SystemExit(2) from None
    json.dump(report, sys.stdout, indent=2)
    print()


def init(settings: KgragSettings) -> dict[str, object]:
    """Check every engine first, create the database if it is missing and allowed, then everything else.
    Re-runnable: each step is idempotent, and nothing is created while any engine is unreachable."""
    database_created = preflight(settings)
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
    return {
        "database_created": database_created,
        "topics_created": created,
        "documents": stats.documents,
        "neo4j": "constraints applied",
    }


def preflight(settings: KgragSettings) -> bool:
    """Every engine answers (else CONFIGURATION_INVALID naming it); returns whether the database was created."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    from neo4j.exceptions import DriverError, Neo4jError
    from opensearchpy import OpenSearch
    from opensearchpy.exceptions import OpenSearchException

    from kgrag_adapters.postgres.provision import ensure_database

    dsn = require(settings.pg_dsn.get_secret_value() if settings.pg_dsn else None, "KGRAG_PG_DSN")
    bootstrap = require(settings.kafka_bootstrap, "KGRAG_KAFKA_BOOTSTRAP")
    url = require(settings.opensearch_url, "KGRAG_OPENSEARCH_URL")
    require(settings.neo4j_uri, "KGRAG_NEO4J_URI")
    try:
        AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    except KafkaException as err:
        raise _unreachable("Kafka", "KGRAG_KAFKA_BOOTSTRAP", err) from err
    auth = None
    if settings.opensearch_user and settings.opensearch_password:
        auth = (settings.opensearch_user, settings.opensearch_password.get_secret_value())
    client = OpenSearch(url, http_auth=auth, timeout=10)
    try:
        client.info()
    except (OpenSearchException, OSError) as err:
        raise _unreachable("OpenSearch", "KGRAG_OPENSEARCH_URL", err) from err
    finally:
        client.close()
    try:
        graph = _neo4j(settings)  # verifies connectivity on connect
    except (DriverError, Neo4jError) as err:
        raise _unreachable("Neo4j", "KGRAG_NEO4J_URI", err) from err
    graph.close()
    return ensure_database(dsn)


def _unreachable(engine: str, setting: str, err: BaseException) -> KgragError:
    return KgragError(
        ErrorCode.CONFIGURATION_INVALID,
        f"{engine} is not reachable: {str(err).strip()[:300]}",
        hint=f"Check {setting} and that {engine} is running; nothing was created, so run init again after.",
    )


def dead_letters(settings: KgragSettings, consumer: str, *, replay: bool, limit: int) -> dict[str, object]:
    from kgrag_runtime.distributed import producer
    from kgrag_runtime.kafka.dlq import replay_dead_letters

    events = producer(settings, f"dlq-replay-{consumer}")
    bootstrap = require(settings.kafka_bootstrap, "KGRAG_KAFKA_BOOTSTRAP")
    report = replay_dead_letters(
        bootstrap, consumer, producer=events, group_prefix=settings.kafka_group_prefix, replay=replay, limit=limit
    )
    return report.as_dict()


def rebuild_projection(settings: KgragSettings, projection: str) -> dict[str, object]:
    from kgrag_core.handlers.graph_writer import GraphWriterHandler
    from kgrag_runtime.graph_projections import rebuild_graph_projections

    with open_stores(settings) as stores:
        doc_ids = [d.doc_id for d in stores.store.list_documents()]
        written = 0
        derived: dict[str, int] = {}
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
            derived = rebuild_graph_projections(graph, stores.store.pool)  # communities, text graph
            graph.close()
    return {"projection": projection, "documents": len(doc_ids), "chunks_written": written, **derived}


def _neo4j(settings: KgragSettings) -> Neo4jLexicalGraph:
    from kgrag_runtime.distributed import connect_neo4j

    return connect_neo4j(settings)


if __name__ == "__main__":
    main()
