"""Fixtures for end-to-end tests on the embedded runtime (real PostgreSQL, Qdrant engine, tantivy, model)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.ports import ChatModel
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded


@pytest.fixture(scope="session")
def embedder() -> OnnxMiniLmEmbedder:
    # One model instance for the session: loading it is the slowest part of a pipeline test.
    return OnnxMiniLmEmbedder()


@pytest.fixture
def settings(tmp_path: Path, pg_dsn: str) -> KgragSettings:
    return KgragSettings(data_dir=tmp_path / "index", pg_dsn=pg_dsn, max_document_bytes=20_000)


@pytest.fixture
def kg(settings: KgragSettings, embedder: OnnxMiniLmEmbedder) -> Iterator[KgragApp]:
    with open_embedded(settings, embedder=embedder) as app:
        yield app


@pytest.fixture
def open_kg(settings: KgragSettings, embedder: OnnxMiniLmEmbedder):  # type: ignore[no-untyped-def]
    """Open the same index again (e.g. to check persistence, or with a scripted LLM)."""

    def _open(llm: ChatModel | None = None):  # type: ignore[no-untyped-def]
        return open_embedded(settings, embedder=embedder, llm=llm)

    return _open
