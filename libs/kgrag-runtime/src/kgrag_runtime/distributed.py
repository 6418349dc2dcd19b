"""Wiring for the distributed runtime: the same use cases on Kafka, PostgreSQL, OpenSearch, Qdrant,
Neo4j, Redis and S3. One function per process kind; adapters are imported here and nowhere else."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, TypeVar, cast

from kgrag_adapters.opensearch.keyword_index import OpenSearchKeywordIndex
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.traces import PostgresTraceStore
from kgrag_adapters.qdrant.vector_index import QdrantVectorIndex
from kgrag_adapters.redis.cache import RedisCache
from kgrag_adapters.s3.object_store import S3ObjectStore
from kgrag_core.documents import DocumentStatus
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import ENTITIES_CHANGED, EntitiesChanged
from kgrag_core.graph.ports import GraphReader
from kgrag_core.graph.routing import RoutedGraphReader
from kgrag_core.indexing.indexer import DocumentIndexer
from kgrag_core.ports import ChatModel, DocumentStore, Embedder
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.shredding import ContentCipher
from kgrag_runtime.app import KgragApp
from kgrag_runtime.evaluation.service import EvalService
from kgrag_runtime.global_answers import build_global_answers
from kgrag_runtime.graph import build_graph_searcher, build_resolution
from kgrag_runtime.graph_admin import GraphAdmin
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.kafka.producer import EventProducer
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.text_graph import build_text_graph_searcher, search_scoped, walk_executor
from kgrag_runtime.wiring import (
    build_embedder,
    build_extraction_llm,
    build_indexer,
    build_llm,
    build_traces,
    connect_graph_store,
)

if TYPE_CHECKING:  # the Neo4j driver is imported by the processes that project or read the graph only
    from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
    from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
    from kgrag_runtime.community_admin import CommunityAdmin

T = TypeVar("T")

NEO4J_READ_TIMEOUT_S = 2.0


class DistributedStores:
    """The distributed engines. PostgreSQL is connected at once; every other engine (and the embedding
    model) on first use, so a worker opens only what its handler touches — the graph-writer and the
    extractor never open the vector index, an entity-resolver never OpenSearch or S3."""

    def __init__(
        self, settings: KgragSettings, stack: ExitStack, store: PostgresGraphStore, embedder: Embedder | None
    ) -> None:
        self.store = store  # the document, extraction and graph ports on one connection
        self._settings = settings
        self._stack = stack
        self._embedder = embedder
        self._lock = threading.RLock()  # re-entrant: the vector index asks for the embedder while opening
        self._opened: dict[str, object] = {}

    def _once(self, name: str, open_engine: Callable[[], T]) -> T:
        with self._lock:
            if name not in self._opened:
                self._opened[name] = open_engine()
            return cast(T, self._opened[name])

    @property
    def stack(self) -> ExitStack:
        """What closes with these stores (the trace recorder registers itself on it)."""
        return self._stack

    @property
    def opened(self) -> frozenset[str]:
        """The engines connected so far (PostgreSQL always)."""
        with self._lock:
            return frozenset({"postgres", *self._opened})

    @property
    def embedder(self) -> Embedder:
        return self._once("embedder", lambda: self._embedder or build_embedder(self._settings))

    @property
    def vectors(self) -> QdrantVectorIndex:
        def open_vectors() -> QdrantVectorIndex:
            settings = self._settings
            if settings.qdrant_url is None and settings.qdrant_path is None:
                require(None, "KGRAG_QDRANT_URL")
            vectors = QdrantVectorIndex.connect(
                settings.qdrant_url,
                path=settings.qdrant_path,
                api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None,
                collection=settings.qdrant_collection,
                dimension=self.embedder.dimension,
            )
            self._stack.callback(vectors.close)
            return vectors

        return self._once("qdrant", open_vectors)

    @property
    def keywords(self) -> OpenSearchKeywordIndex:
        def open_keywords() -> OpenSearchKeywordIndex:
            settings = self._settings
            keywords = OpenSearchKeywordIndex.connect(
                require(settings.opensearch_url, "KGRAG_OPENSEARCH_URL"),
                user=settings.opensearch_user,
                password=settings.opensearch_password.get_secret_value() if settings.opensearch_password else None,
                index=settings.opensearch_index,
                purge_wait_s=settings.opensearch_purge_wait_s,
            )
            self._stack.callback(keywords.close)
            return keywords

        return self._once("opensearch", open_keywords)

    @property
    def objects(self) -> S3ObjectStore:
        return self._once("s3", lambda: S3ObjectStore.connect(self._settings.s3_endpoint, self._settings.s3_bucket))

    @property
    def cache(self) -> RedisCache:
        def open_cache() -> RedisCache:
            settings = self._settings
            cache = RedisCache.connect(
                require(settings.redis_url.get_secret_value() if settings.redis_url else None, "KGRAG_REDIS_URL"),
                namespace=settings.redis_namespace,
            )
            self._stack.callback(cache.close)
            return cache

        return self._once("redis", open_cache)

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
    def routed_graph(self) -> RoutedGraphReader:
        """Graph reads from the Neo4j projection while its watermark has reached PostgreSQL's graph version."""

        def open_routed() -> RoutedGraphReader:
            from neo4j import GraphDatabase, basic_auth
            from neo4j.exceptions import DriverError, Neo4jError

            from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph

            settings = self._settings
            password = settings.neo4j_password.get_secret_value() if settings.neo4j_password else None
            auth = basic_auth(settings.neo4j_user, password) if settings.neo4j_user and password else None
            # Not verified here: a Neo4j that is down at start must not stop the API (reads fall back), and
            # the driver reconnects when it is back. The graph-writer owns the schema.
            driver = GraphDatabase.driver(
                require(settings.neo4j_uri, "KGRAG_NEO4J_URI"),
                auth=auth,
                # A projection that does not answer is a fallback to PostgreSQL, not a 30 s retry loop.
                connection_timeout=NEO4J_READ_TIMEOUT_S,
                max_transaction_retry_time=NEO4J_READ_TIMEOUT_S,
            )
            self._stack.callback(driver.close)
            # The graph-writer seals names, values and quotes under their documents' keys (ADR 0008): the
            # reader opens them with the store's cipher and finds names by the same blind index.
            projection = Neo4jKnowledgeGraph(
                driver,
                settings.neo4j_database,
                namespace=settings.neo4j_namespace,
                cipher=self.store.cipher,
                name_index=lambda norm: self.store.name_index(norm)[0],
            )
            return RoutedGraphReader(self.store, projection, unavailable=(DriverError, Neo4jError))

        return self._once("neo4j", open_routed)

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


def connect_neo4j(settings: KgragSettings) -> Neo4jLexicalGraph:
    """The lexical graph in the deployment's Neo4j database and namespace (KGRAG_NEO4J_DATABASE,
    KGRAG_NEO4J_NAMESPACE), schema applied; `knowledge_graph_on` shares its driver."""
    from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph

    return Neo4jLexicalGraph.connect(
        require(settings.neo4j_uri, "KGRAG_NEO4J_URI"),
        user=settings.neo4j_user,
        password=settings.neo4j_password.get_secret_value() if settings.neo4j_password else None,
        database=settings.neo4j_database,
        namespace=settings.neo4j_namespace,
    )


def knowledge_graph_on(
    lexical: Neo4jLexicalGraph,
    *,
    cipher: ContentCipher | None = None,
    name_index: Callable[[str], str] | None = None,
) -> Neo4jKnowledgeGraph:
    """The knowledge-graph projection (and its reader) beside `lexical`: same driver, database, namespace;
    sealed (names, values and quotes under their documents' keys) when given the cipher and name index."""
    from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph

    return Neo4jKnowledgeGraph(
        lexical.driver, lexical.database, namespace=lexical.namespace, cipher=cipher, name_index=name_index
    )


def graph_reader(settings: KgragSettings, stores: DistributedStores) -> GraphReader:
    """The query API's graph reads (KGRAG_GRAPH_READS): the Neo4j projection while it is caught up with
    PostgreSQL, else PostgreSQL; PostgreSQL alone when reads are pinned there or Neo4j is not configured."""
    if settings.graph_reads == "postgres" or not settings.neo4j_uri:
        return stores.store
    return stores.routed_graph


@contextmanager
def open_stores(settings: KgragSettings, *, embedder: Embedder | None = None) -> Iterator[DistributedStores]:
    with ExitStack() as stack:
        dsn = require(settings.pg_dsn.get_secret_value() if settings.pg_dsn else None, "KGRAG_PG_DSN")
        store = stack.enter_context(connect_graph_store(settings, dsn))
        yield DistributedStores(settings, stack, store, embedder)


def active_document_check(store: DocumentStore) -> Callable[[str], bool]:
    """Whether PostgreSQL holds an active document with this ID (deletes and ACL changes of others: 404)."""

    def is_active(doc_id: str) -> bool:
        doc = store.get_document(doc_id)
        return doc is not None and doc.status is DocumentStatus.ACTIVE

    return is_active


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
        app = query_app(settings, stores, llm=llm)
        try:
            yield app
        finally:
            # The producer goes with the app, on this thread (never left to the collector: EventProducer.close).
            if isinstance(app.ingestion, KafkaIngest) and isinstance(app.ingestion.sink, EventProducer):
                app.ingestion.sink.close()


def query_app(settings: KgragSettings, stores: DistributedStores, *, llm: ChatModel | None = None) -> KgragApp:
    """The query API's app on stores already open (a test's workers share them)."""
    searcher = search_scoped(stores.searcher())  # the router and the dense route: one embedding per search
    graph = graph_reader(settings, stores)
    events = producer(settings, "query-api")
    extraction = None
    if settings.extraction_enabled:
        # The admin and claims routes, as on the embedded runtime (without it they answered 500 "switched
        # off"). A re-extraction run extracts in this process; the extractor service reads the ontology in
        # force when it starts.
        from kgrag_runtime.extraction import build_extractor, build_rerun
        from kgrag_runtime.extraction_admin import ExtractionAdmin

        extractor = build_extractor(
            settings, store=stores.store, llm=llm if llm is not None else build_extraction_llm(settings)
        )
        extraction = ExtractionAdmin(
            stores.store, stores.store, extractor, build_rerun(settings, documents=stores.store, extractor=extractor)
        )
    chat = llm if llm is not None else build_llm(settings)
    graph_searcher = build_graph_searcher(settings, searcher, graph, searcher.embedder)
    text_graph_searcher = build_text_graph_searcher(
        settings, searcher, stores.store, graph_searcher.router, executor=walk_executor(stores.stack)
    )
    traces = build_traces(
        settings, stores.stack, store=stores.store, searcher=searcher, graph_searcher=graph_searcher, llm=chat
    )
    return KgragApp(
        searcher=searcher,
        ingestion=KafkaIngest(
            events,
            cipher=stores.store.cipher,
            ack_timeout_s=settings.kafka_ack_timeout_s,
            is_active=active_document_check(stores.store),
        ),
        ingest_log=stores.store,
        stats_source=stores.store,
        cache=stores.cache,
        llm=chat,
        answer_cache_ttl_s=settings.answer_cache_ttl_s,
        answer_style=settings.answer_style,
        extraction=extraction,
        # PostgreSQL is authoritative; the Neo4j projection answers only while it is caught up with it.
        graph_searcher=graph_searcher,
        graph_reads=graph if isinstance(graph, RoutedGraphReader) else None,
        graph_by_default=settings.graph_retrieval,
        graph=GraphAdmin(
            stores.store,
            stores.store,
            build_resolution(settings, store=stores.store, embedder=stores.embedder),
            announce=_announcer(events),
            reader=graph,
        ),
        answer_cipher=stores.store.cipher,
        # An eval run indexes its suite into a temporary embedded index: the serving stores are only where
        # its report is kept.
        evaluation=EvalService(settings, stores.store.eval_runs, embedder=stores.embedder, llm=chat),
        traces=traces,
        curation=PostgresTraceStore(stores.store.pool, cipher=stores.store.cipher),
        communities=_community_admin(settings, stores, graph),
        global_answers=build_global_answers(
            stores.store.pool,
            graph,
            searcher,
            stores.cache.generation,
            on_router=settings.global_on_router,
            chat=chat,
        ),
        text_graph_searcher=text_graph_searcher,
        text_graph_by_default=settings.text_graph,
        body_store=lambda: stores.objects,
    )


def _community_admin(settings: KgragSettings, stores: DistributedStores, reader: GraphReader) -> CommunityAdmin | None:
    """The community API of the query API; the community-builder service keeps them current."""
    if not settings.communities_enabled:
        return None
    from kgrag_runtime.communities import build_communities
    from kgrag_runtime.community_admin import CommunityAdmin
    from kgrag_runtime.global_answers import summary_preview

    # The dry run prices the summaries as on the embedded runtime (the admin page's preview shows it).
    service = build_communities(settings, stores.store.pool)
    return CommunityAdmin(service, reader, stores.store, preview=summary_preview(settings))


def _announcer(events: EventProducer) -> Callable[[EntitiesChanged], None]:
    def announce(event: EntitiesChanged) -> None:
        key = event.entity_ids[0] if event.entity_ids else "hubs"
        events.produce(ENTITIES_CHANGED, key, event.model_dump(mode="json"))
        events.flush()

    return announce
