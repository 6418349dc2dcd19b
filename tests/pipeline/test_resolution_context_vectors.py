"""Resolution's context vectors on the embedded runtime: taken from the chunk vectors the indexer cached, so
ingesting with extraction and resolution on asks the embedding model for the chunks and nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.handlers.composite import handler_parts
from kgrag_core.handlers.entity_resolver import EntityResolverHandler
from kgrag_runtime.benchmarks.prose import prose_documents
from kgrag_runtime.ingest_gateway import EmbeddedIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded


@dataclass
class CountingModel:
    """The real model, recording every text it embeds."""

    inner: OnnxMiniLmEmbedder
    texts: list[str] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.texts.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self.inner.embed_query(text)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


def test_ingest_embeds_only_chunks_and_every_context_comes_from_their_vectors(
    settings: KgragSettings, embedder: OnnxMiniLmEmbedder, pg_dsn: str
) -> None:
    model = CountingModel(embedder)
    docs = list(prose_documents(40))
    with open_embedded(settings, embedder=model) as kg:
        outcomes = kg.ingest(docs)
        assert all(o.error_code is None for o in outcomes)
        assert isinstance(kg.ingestion, EmbeddedIngest)
        [resolver] = [h for h in handler_parts(kg.ingestion.handlers) if isinstance(h, EntityResolverHandler)]
        report = resolver.last_report
        assert report is not None and report.profiles > 10  # the prose names people, organisations, places
        assert (report.context_from_chunks, report.embedded) == (report.profiles, 0)
        # Each chunk text once (one chunk per document), and no entity context.
        assert len(model.texts) == sum(o.chunks_embedded for o in outcomes) == len(docs)
        assert all(text.split("\n", 1)[1] in {d.body.decode() for d in docs} for text in model.texts)
        assert kg.graph is not None
        full = kg.graph.resolution.run()  # the periodic full pass reads every profile the same way
        assert full.profiles >= report.profiles
        assert (full.context_from_chunks, full.embedded) == (full.profiles, 0)
        assert len(model.texts) == len(docs)
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute("SELECT count(*), count(embedding_key) FROM chunks").fetchone()
    assert row is not None and row[0] == row[1] == len(docs)  # every chunk names its cached vector
