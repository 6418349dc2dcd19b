"""Wiring for the distributed runtime: the same use cases on Kafka, PostgreSQL, OpenSearch, Qdrant,
Neo4j, Redis and S3. One function per process kind; adapters are imported here and nowhere else."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from kgrag_adapters.opensearch.keyword_index import OpenSearchKeywordIndex
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.qdrant.vector_index import QdrantVectorIndex
from kgrag_adapters.redis.cache import RedisCache
from kgrag_adapters.s3.object_store import S3ObjectStore
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import ENTITIES_CHANGED, EntitiesChanged
from kgrag_core.indexing.indexer import DocumentIndexer
from kgrag_core.ports import ChatModel, Embedder
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_runtime.app import KgragApp
from kgrag_runtime.graph import build_graph_searcher, build_resolution
from kgrag_runtime.graph_admin import GraphAdmin
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.kafka.producer import EventProducer
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder, build_indexer, build_key_ring, build_llm


@dataclass(slots=True)
class DistributedStores:
    store: PostgresGraphStore  # the document, extraction and graph ports on one connection
    vectors: QdrantVectorIndex
    keywords: OpenSearchKeywordIndex
    objects: S3ObjectStore
    cache: RedisCache
    embedder: Embedder

    def indexer(self, settings: KgragSettings) -> DocumentIndexer:
        return build_indexer(
            settings,
            store=self.store,
            vectors=self.vectors,
            keywords=self.keywords,
            objects=self.objects,
            cache=self.cache,
            embedder=self.embedder,
        )

    @property
    def extraction(self) -> PostgresGraphStore:
        return self.store

    def searcher(self) -> HybridSearcher:
        return HybridSearcher(self.store, self.store, self.vectors, self.keywords, self.embedder)


def require(value: str | None, name: str) -> str:
    if not value:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            f"The distributed runtime needs {name}.",
            hint=f"Set {name} (see docs/configuration.md).",
        )
    return value


@contextmanager
def open_stores(settings: KgragSettings, *, embedder: Embedder | None = None) -> Iterator[DistributedStores]:
    with ExitStack() as stack:
        dsn = require(settings.pg_dsn.get_secret_value() if settings.pg_dsn else None, "KGRAG_PG_DSN")
        store = stack.enter_context(
            PostgresGraphStore.connect(dsn, kek=build_key_ring(settings), encrypt=settings.content_encryption)
        )
        model = embedder or build_embedder(settings)
        if settings.qdrant_url is None and settings.qdrant_path is None:
            require(None, "KGRAG_QDRANT_URL")
        vectors = QdrantVectorIndex.connect(
            settings.qdrant_url,
            path=settings.qdrant_path,
            api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None,
            collection=settings.qdrant_collection,
            dimension=model.dimension,
        )
        stack.callback(vectors.close)
        keywords = OpenSearchKeywordIndex.connect(
            require(settings.opensearch_url, "KGRAG_OPENSEARCH_URL"),
            user=settings.opensearch_user,
            password=settings.opensearch_password.get_secret_value() if settings.opensearch_password else None,
            index=settings.opensearch_index,
        )
        stack.callback(keywords.close)
        objects = S3ObjectStore.connect(settings.s3_endpoint, settings.s3_bucket)
        cache = RedisCache.connect(
            require(settings.redis_url.get_secret_value() if settings.redis_url else None, "KGRAG_REDIS_URL"),
            namespace=settings.redis_namespace,
        )
        stack.callback(cache.close)
        yield DistributedStores(store, vectors, keywords, objects, cache, model)


def producer(settings: KgragSettings, client_id: str) -> EventProducer:
    return EventProducer(
        require(settings.kafka_bootstrap, "KGRAG_KAFKA_BOOTSTRAP"),
        client_id=client_id,
        topic_prefix=settings.kafka_topic_prefix,
    )


@contextmanager
def open_query_app(
    settings: KgragSettings, *, embedder: Embedder | None = None, llm: ChatModel | None = None
) -> Iterator[KgragApp]:
    """The query API's app: searches the distributed stores; ingestion goes onto Kafka."""
    with open_stores(settings, embedder=embedder) as stores:
        searcher = stores.searcher()
        events = producer(settings, "query-api")
        yield KgragApp(
            searcher=searcher,
            ingestion=KafkaIngest(events, cipher=stores.store.cipher),
            ingest_log=stores.store,
            stats_source=stores.store,
            cache=stores.cache,
            llm=llm if llm is not None else build_llm(settings),
            answer_cache_ttl_s=settings.answer_cache_ttl_s,
            # Graph reads come from PostgreSQL here too (it is authoritative); the Neo4j projection serves
            # other readers and the traversal benchmark.
            graph_searcher=build_graph_searcher(settings, searcher, stores.store, stores.embedder),
            graph_by_default=settings.graph_retrieval,
            graph=GraphAdmin(
                stores.store,
                stores.store,
                build_resolution(settings, store=stores.store, embedder=stores.embedder),
                announce=_announcer(events),
            ),
        )


def _announcer(events: EventProducer) -> Callable[[EntitiesChanged], None]:
    def announce(event: EntitiesChanged) -> None:
        key = event.entity_ids[0] if event.entity_ids else "hubs"
        events.produce(ENTITIES_CHANGED, key, event.model_dump(mode="json"))
        events.flush()

    return announce
