"""Wiring of the knowledge graph's use cases: entity resolution and the graph-assisted searcher."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph.ports import GraphReader
from kgrag_core.graph_retrieval.expansion import ExpansionSettings
from kgrag_core.graph_retrieval.router import QuestionRouter, RuleRouter
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher, GraphSearchSettings
from kgrag_core.ports import Embedder, TokenCounter
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_runtime.settings import KgragSettings

if TYPE_CHECKING:  # resolution is built for ingestion and curation; a search imports only the searcher
    from kgrag_adapters.postgres.graph_store import PostgresGraphStore
    from kgrag_core.graph_retrieval.learned_router import LearnedRouter, RouterExample
    from kgrag_core.handlers.entity_resolver import EntityResolverHandler
    from kgrag_core.resolution.service import ResolutionService

# Same folder as kgrag_runtime.extraction.SCHEMAS, without importing the extraction tiers for it.
DEFAULT_OVERRIDES = Path(__file__).resolve().parent / "schemas" / "resolution" / "overrides.yaml"
BUNDLED_ROUTER_DIR = Path(__file__).resolve().parents[4] / "corpora" / "router"
BUNDLED_ROUTER_SET = BUNDLED_ROUTER_DIR / "questions.jsonl"
# The dev split of the bundled eval questions, copied (the image ships corpora/router only); never a test question.
BUNDLED_ROUTER_DEV = BUNDLED_ROUTER_DIR / "questions-bundled-dev.jsonl"
# The learned router fitted from the two files above (`python -m kgrag_runtime.router_fit` writes it).
BUNDLED_ROUTER_FITTED = BUNDLED_ROUTER_DIR / "learned-router.json"


def build_resolution(
    settings: KgragSettings, *, store: PostgresGraphStore, embedder: Embedder | None
) -> ResolutionService:
    from kgrag_core.resolution.resolver import Overrides, Resolver, parse_overrides
    from kgrag_core.resolution.service import ResolutionService
    from kgrag_runtime.extraction import read_yaml

    path = settings.resolution_overrides_file or DEFAULT_OVERRIDES
    overrides = parse_overrides(read_yaml(path)) if path.exists() else Overrides()
    return ResolutionService(
        store=store,
        resolver=Resolver(),
        embedder=embedder,
        context_source=store,  # context vectors from the chunk vectors the indexer cached
        overrides=overrides,
        hub_min_degree=settings.resolution_hub_min_degree,
    )


def build_graph_searcher(
    settings: KgragSettings, hybrid: HybridSearcher, graph: GraphReader, embedder: Embedder
) -> GraphAssistedSearcher:
    # Graph lines and chunks share one budget measured with the embedding model's tokenizer when it has one.
    counter = embedder if isinstance(embedder, TokenCounter) else None
    search = GraphSearchSettings(
        expansion=ExpansionSettings(time_budget_s=settings.graph_expansion_budget_s),
        graph_timeout_s=settings.graph_timeout_s,
    )
    return GraphAssistedSearcher(
        hybrid, graph, settings=search, token_counter=counter, router=build_router(settings, embedder)
    )


def build_router(settings: KgragSettings, embedder: Embedder) -> QuestionRouter:
    """The configured question router. The learned one uses the shipped fitted model when it was fitted from
    the bundled sets with this embedding model; otherwise (a custom set, another model) it trains on first use."""
    if settings.router == "rules":
        return RuleRouter()
    return learned_router(embedder, settings.router_questions_file)


def learned_router(embedder: Embedder, questions_file: Path | None = None) -> LearnedRouter:
    """The learned router on `questions_file` (trained on first use), or on the bundled sets with their fit."""
    from kgrag_core.graph_retrieval.learned_router import LearnedRouter, parse_fitted

    fitted = None
    if questions_file is None and BUNDLED_ROUTER_FITTED.is_file():
        fitted = parse_fitted(BUNDLED_ROUTER_FITTED.read_text(encoding="utf-8"))
    return LearnedRouter(embedder, router_examples(questions_file), fitted=fitted)


def router_examples(path: Path | None = None) -> list[RouterExample]:
    """The learned router's training set: `path` alone, or the bundled router set plus the bundled dev questions."""
    from kgrag_core.graph_retrieval.learned_router import parse_router_examples

    paths = [path] if path is not None else [BUNDLED_ROUTER_SET, BUNDLED_ROUTER_DEV]
    lines: list[str] = []
    for file in paths:
        if not file.is_file():
            raise KgragError(
                ErrorCode.SOURCE_UNREADABLE,
                f"No router training set at {file}.",
                hint="Set KGRAG_ROUTER_QUESTIONS_FILE to a copy of corpora/router/questions.jsonl, "
                "or KGRAG_ROUTER=rules.",
            )
        lines += file.read_text(encoding="utf-8").splitlines()
    return parse_router_examples(lines)


def build_resolver_handler(settings: KgragSettings, service: ResolutionService, *, name: str = "entity-resolver"
                           ) -> EntityResolverHandler:  # fmt: skip
    """The handler both runtimes run on graph.changed, with the configured full-pass interval."""
    from kgrag_core.handlers.entity_resolver import EntityResolverHandler

    every = settings.resolution_full_pass_every_s
    return EntityResolverHandler(service, name=name, full_pass_every_s=every if every > 0 else None)
