"""Wiring of the text graph (issue 13) for both runtimes: its store, its ingest handler and its searcher."""

from __future__ import annotations

from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING

from kgrag_adapters.postgres.text_graph import PostgresTextGraph
from kgrag_core.graph_retrieval.router import QuestionRouter
from kgrag_core.handlers.protocol import Handler
from kgrag_core.ports import Embedder
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.retrieval.query_vectors import SearchScopedEmbedder
from kgrag_core.text_graph.model import TextGraphSettings
from kgrag_core.text_graph.ports import PhraseExtractor
from kgrag_core.text_graph.searcher import TextGraphSearcher
from kgrag_runtime.settings import KgragSettings

if TYPE_CHECKING:  # built for ingestion only: a search never loads the spaCy pipeline
    from kgrag_adapters.postgres.extraction_store import PostgresExtractionStore
    from kgrag_core.handlers.text_graph import TextGraphHandler
    from kgrag_runtime.quality_metrics import TextGraphMetrics


def text_graph_store(store: PostgresExtractionStore) -> PostgresTextGraph:
    """The authoritative text graph on the store's pool, keyed like entity ids (the installation key)."""
    return PostgresTextGraph(store.pool, store.installation_key, store.cipher)


def text_graph_settings(settings: KgragSettings) -> TextGraphSettings:
    return TextGraphSettings(timeout_s=settings.text_graph_timeout_s)


def build_text_graph_handler(
    settings: KgragSettings,
    store: PostgresExtractionStore,
    metrics: TextGraphMetrics | None,
    *,
    embedder: Embedder | None = None,
    name: str = "text-graph",
) -> TextGraphHandler:
    from kgrag_core.handlers.text_graph import TextGraphHandler
    from kgrag_core.text_graph.builder import TextGraphBuilder

    builder = TextGraphBuilder(
        text_graph_store(store), phrase_extractor(settings), text_graph_settings(settings), embedder=embedder
    )
    return TextGraphHandler(
        store, builder, name=name, on_batch=metrics.build_seconds.observe if metrics is not None else None
    )


def phrase_extractor(settings: KgragSettings) -> PhraseExtractor:
    """KGRAG_TEXT_GRAPH_EXTRACTOR's extractor (the spaCy pipeline is loaded on first use, not here)."""
    choice = settings.text_graph_extractor
    if choice in ("parser", "tagger") and not settings.text_graph_noun_phrases:
        choice = "ner"
    if choice == "patterns":
        from kgrag_core.text_graph.patterns import PatternPhraseExtractor

        return PatternPhraseExtractor()
    from kgrag_adapters.spacy_ner.phrases import SpacyPhraseExtractor

    return SpacyPhraseExtractor(noun_phrases="off" if choice == "ner" else choice)


def build_text_graph_searcher(
    settings: KgragSettings,
    hybrid: HybridSearcher,
    store: PostgresExtractionStore,
    router: QuestionRouter,
    *,
    executor: Executor | None = None,
) -> TextGraphSearcher:
    """Always built (it loads no model): a per-call `text_graph=true` walks whatever graph ingest has built.
    `executor` runs each walk's neighbourhood statement while hybrid's passages are hydrated (`walk_executor`)."""
    return TextGraphSearcher(
        hybrid, text_graph_store(store), settings=text_graph_settings(settings), router=router, executor=executor
    )


def walk_executor(stack: ExitStack) -> Executor:
    """The walks' threads (one per concurrent walk, up to 4), shut down with the app's stack."""
    return stack.enter_context(ThreadPoolExecutor(max_workers=4, thread_name_prefix="text-graph"))


def search_scoped(hybrid: HybridSearcher) -> HybridSearcher:
    """`hybrid` with an embedder that a search scope can share with the router (one embedding per search; it
    is also the router's embedder: build the graph searcher with `hybrid.embedder`)."""
    return replace(hybrid, embedder=SearchScopedEmbedder(hybrid.embedder))


def with_text_graph(
    settings: KgragSettings,
    handler: Handler,
    store: PostgresExtractionStore,
    metrics: TextGraphMetrics | None,
    *,
    embedder: Embedder | None = None,
) -> Handler:
    """The extractor service's handler (distributed): with KGRAG_TEXT_GRAPH, the text graph is built from the
    same chunks.changed stream in the same consumer group, by the handler the embedded runtime runs."""
    if not settings.text_graph:
        return handler
    from kgrag_core.handlers.composite import CompositeHandler

    graph = build_text_graph_handler(settings, store, metrics, embedder=embedder)
    return CompositeHandler(handler.name, [handler, graph])
