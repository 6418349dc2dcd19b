"""One wiring function for the embedded process: settings in, a running `KgragApp` out.

Adapters are imported here and nowhere else in the runtime, so the use cases stay engine-agnostic.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

from kgrag_adapters.crypto.kek import KeyRing, file_key_ring, secret_key_ring
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_adapters.localfs.object_store import LocalObjectStore
from kgrag_adapters.memory.cache import InMemoryCache
from kgrag_adapters.postgres.embedded import EmbeddedPostgres
from kgrag_adapters.postgres.extraction_store import PostgresExtractionStore
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.lifetime import STOPPING_MARKER
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.postgres.traces import PostgresTraceStore
from kgrag_adapters.qdrant_edge.vector_index import EdgeVectorIndex
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.chunking import estimate_tokens
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher
from kgrag_core.handlers.protocol import Handler
from kgrag_core.indexing.indexer import DocumentIndexer, IndexerSettings, in_turn
from kgrag_core.ports import Cache, ChatModel, Embedder, KeywordIndex, ObjectStore, TokenCounter, VectorIndex
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_runtime.app import KgragApp
from kgrag_runtime.bus import InProcessBus
from kgrag_runtime.concurrent_writes import all_at_once
from kgrag_runtime.evaluation.service import EvalService
from kgrag_runtime.global_answers import build_global_answers
from kgrag_runtime.graph import build_graph_searcher
from kgrag_runtime.ingest_gateway import EmbeddedIngest, IngestGateway, ReadOnlyIngest
from kgrag_runtime.quality_metrics import QualityMetrics
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.single_writer import SingleWriter
from kgrag_runtime.text_graph import build_text_graph_searcher, search_scoped, walk_executor
from kgrag_runtime.traces import TraceRecorder, VersionSource

# How long a start waits for the supervisor's momentary probe of the lock, and for it to stop a server.
_LOCK_PATIENCE_S = 0.5
_STOPPING_PATIENCE_S = 30.0


def connect_graph_store(settings: KgragSettings, dsn: str) -> PostgresGraphStore:
    """The authoritative store, as every runtime opens it: pooled, sealing content under the key ring, and
    keying entity ids with the installation's secret."""
    store = PostgresGraphStore.connect(
        dsn, pool_size=settings.pg_pool_size, kek=build_key_ring(settings), encrypt=settings.content_encryption
    )
    try:
        adopt_entity_id_key(store, settings)
    except BaseException:
        store.close()
        raise
    return store


def adopt_entity_id_key(store: PostgresGraphStore, settings: KgragSettings) -> None:
    """Key entity ids with KGRAG_ENTITY_ID_KEY when it is set (else PostgreSQL's generated key stays)."""
    if settings.entity_id_key is not None:
        store.use_entity_id_key(settings.entity_id_key.get_secret_value().encode("utf-8"))


def build_key_ring(settings: KgragSettings) -> KeyRing:
    """The key-encryption keys, for both runtimes: KGRAG_KEK (+ KGRAG_KEK_PREVIOUS), else the key files in
    KGRAG_KEK_DIR, else (embedded only) <data_dir>/keys, created on first start."""
    if settings.kek is not None:
        previous = settings.kek_previous.get_secret_value().split(",") if settings.kek_previous else []
        return secret_key_ring(settings.kek.get_secret_value(), previous)
    if settings.kek_dir is not None:
        return file_key_ring(settings.kek_dir.expanduser())
    if settings.runtime == "distributed":
        # Each process would otherwise make its own KEK and none could read another's content.
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            "The distributed runtime needs a key-encryption key shared by every process.",
            hint="Set KGRAG_KEK (from a secret store) or KGRAG_KEK_DIR (a mounted key folder); see docs/operations.md.",
        )
    return file_key_ring(settings.data_dir.expanduser().resolve() / "keys")


def build_embedder(settings: KgragSettings) -> Embedder:
    if settings.embedder == "openai":
        if not (settings.embeddings_base_url and settings.embeddings_model):
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                "KGRAG_EMBEDDER=openai needs an endpoint and a model.",
                hint="Set KGRAG_EMBEDDINGS_BASE_URL and KGRAG_EMBEDDINGS_MODEL (and KGRAG_EMBEDDINGS_API_KEY).",
            )
        # Imported only when configured: the HTTP client adds most of a second to every CLI start.
        from kgrag_adapters.embeddings.openai_compatible import OpenAICompatibleEmbedder

        key = settings.embeddings_api_key.get_secret_value() if settings.embeddings_api_key else None
        return OpenAICompatibleEmbedder(
            settings.embeddings_base_url, settings.embeddings_model, key, settings.embeddings_dimension
        )
    return OnnxMiniLmEmbedder(batch_size=settings.embed_batch_size, intra_op_threads=settings.embed_threads)


def build_llm(settings: KgragSettings, *, retry_rate_limits: bool = True) -> ChatModel | None:
    """The chat model: recorded replies when KGRAG_LLM_REPLAY_DIR is set, else the configured endpoint
    (recorded when KGRAG_LLM_RECORD_DIR is set), else None. Extraction passes retry_rate_limits=False: tier 3
    waits out rate limits itself, so the two retry loops never multiply."""
    if settings.llm_replay_dir is not None:
        from kgrag_adapters.llm.replay import ReplayChatModel

        # Recordings are keyed by the model they were made with: keep KGRAG_LLM_MODEL as it was then.
        return ReplayChatModel(settings.llm_replay_dir, settings.llm_model or "replay")
    if not (settings.llm_base_url and settings.llm_model):
        return None
    from kgrag_adapters.llm.openai_chat import OpenAICompatibleChat

    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    chat: ChatModel = OpenAICompatibleChat(
        settings.llm_base_url,
        settings.llm_model,
        key,
        timeout_s=settings.llm_timeout_s,
        retry_rate_limits=retry_rate_limits,
    )
    if settings.llm_record_dir is not None:
        from kgrag_adapters.llm.replay import RecordingChatModel

        chat = RecordingChatModel(chat, settings.llm_record_dir)
    return chat


def build_extraction_llm(settings: KgragSettings) -> ChatModel | None:
    """Tier 3's chat model: the reply book when KGRAG_EXTRACTION_REPLY_BOOK is set, else `build_llm`'s,
    without its rate-limit retries (tier 3 waits out rate limits itself, so two loops never multiply)."""
    if settings.extraction_reply_book is not None:
        from kgrag_adapters.llm.reply_book import ReplyBookChatModel

        return ReplyBookChatModel(settings.extraction_reply_book)
    return build_llm(settings, retry_rate_limits=False)


def build_traces(
    settings: KgragSettings,
    stack: ExitStack,
    *,
    store: PostgresGraphStore,
    searcher: HybridSearcher,
    graph_searcher: GraphAssistedSearcher | None,
    llm: ChatModel | None,
) -> TraceRecorder | None:
    """The trace recorder on the store's connections (closed, after writing what it holds, with `stack`);
    None when KGRAG_TRACES_ENABLED=false."""
    if not settings.traces_enabled:
        return None
    versions = VersionSource(searcher, graph_searcher, llm, settings.extractor_version, store.active_ontology)
    recorder = TraceRecorder(
        PostgresTraceStore(store.pool), versions.current, retention_days=settings.trace_retention_days
    )
    stack.callback(recorder.close)
    return recorder


def build_indexer(
    settings: KgragSettings,
    *,
    store: PostgresStore,
    vectors: VectorIndex,
    keywords: KeywordIndex,
    objects: ObjectStore,
    cache: Cache,
    embedder: Embedder,
) -> DocumentIndexer:
    """The chunk-indexer use case on the given stores; every runtime builds it here."""
    return DocumentIndexer(
        documents=store,
        vectors=vectors,
        keywords=keywords,
        objects=objects,
        embedder=embedder,
        embedding_cache=store,
        cache=cache,
        extraction_store=store if isinstance(store, PostgresExtractionStore) else None,
        # The raw body is sealed under the same data key as the document's rows (ADR 0008).
        cipher=store.cipher,
        # Chunk sizes are measured with the embedding model's own tokenizer when it has one, so a
        # chunk fits the model's window.
        count_tokens=embedder.count_tokens if isinstance(embedder, TokenCounter) else estimate_tokens,
        settings=IndexerSettings(
            max_document_bytes=settings.max_document_bytes,
            chunk_max_tokens=settings.chunk_max_tokens,
            chunk_overlap_tokens=settings.chunk_overlap_tokens,
        ),
        # The distributed stores are separate servers: their writes for a batch overlap. The embedded
        # ones share this process's cores and single-writer indexes, so they run in turn.
        run_all=all_at_once if settings.runtime == "distributed" else in_turn,
    )


@contextmanager
def open_embedded(
    settings: KgragSettings,
    *,
    embedder: Embedder | None = None,
    llm: ChatModel | None = None,
    reads_only: bool = False,
    keep_postgres: bool = False,
) -> Iterator[KgragApp]:
    """Start (or reuse) every embedded store under `settings.data_dir` and yield the wired app.

    `reads_only` is for commands that never write (search, ask): no extractor (so no NER model), no
    ingestion handlers; the app's ingestion refuses with CONFIGURATION_INVALID.
    `keep_postgres` (the CLI) leaves the embedded PostgreSQL running for the next call; its supervisor
    stops it after KGRAG_PG_IDLE_SHUTDOWN_S without use. Without it (`kgrag serve`, tests) the server
    stops when this process lets go of it (docs/architecture.md, "Process lifetime")."""
    data_dir = settings.data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        stack.enter_context(_exclusive(data_dir))
        if settings.pg_dsn is not None:
            dsn = settings.pg_dsn.get_secret_value()
        else:
            idle_s = settings.pg_idle_shutdown_s
            server = EmbeddedPostgres(
                data_dir / "postgres",
                keep_running=keep_postgres and idle_s > 0,
                supervise=(data_dir, idle_s) if idle_s > 0 else None,
            )
            dsn = stack.enter_context(server).dsn
        store = stack.enter_context(connect_graph_store(settings, dsn))
        model = embedder or build_embedder(settings)
        vectors = EdgeVectorIndex(data_dir / "qdrant", model.dimension)
        stack.callback(vectors.close)
        keywords = TantivyKeywordIndex(data_dir / "bm25")
        stack.callback(keywords.close)
        objects = LocalObjectStore(data_dir / "objects")
        cache = InMemoryCache()
        indexer = build_indexer(
            settings, store=store, vectors=vectors, keywords=keywords, objects=objects, cache=cache, embedder=model
        )
        if keywords.needs_reprojection:  # an index from before the date field: rewritten from PostgreSQL
            indexer.reproject([d.doc_id for d in store.list_documents()], vectors=False)
        chat = llm if llm is not None else build_llm(settings)
        handlers: list[Handler] = []
        if not reads_only:
            from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
            from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler

            handlers += [ChunkIndexerHandler(indexer), AclPropagatorHandler(indexer)]
        writer = SingleWriter()  # one writer at a time on the in-process indexes; reads never wait for it
        quality = QualityMetrics()  # the app's metrics; in-process extraction reports its spend into them
        extraction = None
        graph_admin = None
        communities = None
        if settings.extraction_enabled and not reads_only:
            # Imported here: a search or an answer never loads the extraction tiers (or their NER model).
            from kgrag_core.handlers.extractor import ExtractorHandler
            from kgrag_runtime.extraction import build_extractor, build_rerun, usage_observer
            from kgrag_runtime.extraction_admin import ExtractionAdmin
            from kgrag_runtime.graph import build_resolution, build_resolver_handler
            from kgrag_runtime.graph_admin import GraphAdmin

            # A model passed in (tests) is used as it is.
            extraction_chat = llm if llm is not None else build_extraction_llm(settings)
            extractor = build_extractor(settings, store=store, llm=extraction_chat)
            handlers.append(ExtractorHandler(store, extractor, on_report=usage_observer(settings, quality.extraction)))
            extraction = ExtractionAdmin(
                store, store, extractor, build_rerun(settings, documents=store, extractor=extractor), writer=writer
            )
            resolution = build_resolution(settings, store=store, embedder=model)
            graph_admin = GraphAdmin(store, store, resolution, writer=writer)
            resolver: Handler | None = (
                build_resolver_handler(settings, resolution) if settings.resolution_enabled else None
            )
            if settings.communities_enabled:
                from kgrag_core.handlers.composite import CompositeHandler
                from kgrag_runtime.communities import CommunityMetrics, build_communities, build_community_handler
                from kgrag_runtime.community_admin import CommunityAdmin
                from kgrag_runtime.global_answers import summary_preview

                community_service = build_communities(settings, store.pool)
                communities = CommunityAdmin(
                    community_service, store, store, writer=writer, preview=summary_preview(settings)
                )
                if resolver is not None:
                    # One consumer of graph.changed (the in-process bus has one queue per topic): resolution
                    # first, then the communities it changed, on each batch.
                    # Its metrics on the app's /metrics, as the community-builder service serves its own.
                    own = CommunityMetrics(quality.registry, community_service)
                    parts = [resolver, build_community_handler(settings, community_service, metrics=own)]
                    resolver = CompositeHandler("entity-resolver", parts)
            if resolver is not None:
                handlers.append(resolver)
        if settings.text_graph and not reads_only:
            from kgrag_runtime.text_graph import build_text_graph_handler

            handlers.append(build_text_graph_handler(settings, store, quality.text_graph, embedder=model))
        ingestion: IngestGateway = (
            ReadOnlyIngest()
            if reads_only
            else EmbeddedIngest(
                bus=InProcessBus(settings.bus_partitions, settings.ingest_batch_documents),
                handlers=handlers,
                ingest_log=store,
                batch_documents=settings.ingest_batch_documents,
                writer=writer,
            )
        )
        # The router and the dense route share one embedding per search (kgrag_core.retrieval.query_vectors).
        searcher = search_scoped(HybridSearcher(store, store, vectors, keywords, model))
        graph_searcher = build_graph_searcher(settings, searcher, store, searcher.embedder)
        text_graph_searcher = build_text_graph_searcher(
            settings, searcher, store, graph_searcher.router, executor=walk_executor(stack)
        )
        traces = build_traces(settings, stack, store=store, searcher=searcher, graph_searcher=graph_searcher, llm=chat)
        yield KgragApp(
            searcher=searcher,
            ingestion=ingestion,
            ingest_log=store,
            stats_source=store,
            cache=cache,
            llm=chat,
            answer_cache_ttl_s=settings.answer_cache_ttl_s,
            answer_style=settings.answer_style,
            extraction=extraction,
            graph_searcher=graph_searcher,
            graph_by_default=settings.graph_retrieval,
            graph=graph_admin,
            answer_cipher=store.cipher,
            traces=traces,
            curation=PostgresTraceStore(store.pool, cipher=store.cipher),
            quality=quality,
            evaluation=EvalService(settings, store.eval_runs, embedder=model, llm=chat),
            global_answers=build_global_answers(
                store.pool, store, searcher, cache.generation, on_router=settings.global_on_router, chat=chat
            ),
            communities=communities,
            text_graph_searcher=text_graph_searcher,
            text_graph_by_default=settings.text_graph,
            body_store=lambda: objects,
        )


@contextmanager
def _exclusive(data_dir: Path) -> Iterator[IO[str]]:
    """The in-process indexes allow one writer: a second process on the same folder gets a clear error.

    The PostgreSQL supervisor (kgrag_adapters.postgres.lifetime) takes this lock for a moment to see whether
    the folder is in use, and for the second or so it takes to stop an idle server: a start that meets it
    waits for it instead of failing."""
    handle = open(data_dir / ".lock", "a+")  # noqa: SIM115 - held for the whole context
    deadline = time.monotonic() + _LOCK_PATIENCE_S
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError as err:
            stopping = (data_dir / STOPPING_MARKER).exists()
            if time.monotonic() < (deadline + _STOPPING_PATIENCE_S if stopping else deadline):
                time.sleep(0.02)
                continue
            handle.close()
            raise KgragError(
                ErrorCode.DATA_DIR_LOCKED,
                f"Another kgrag process is using {data_dir}.",
                hint="Stop it (for example a running `kgrag serve`), or pass a different --data-dir.",
            ) from err
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    try:
        yield handle
    finally:
        # The supervisor reads the lock file's mtime as "last used": a call shorter than its poll still counts.
        os.utime(handle.fileno())
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
