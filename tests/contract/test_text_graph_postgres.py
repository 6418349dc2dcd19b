"""PostgresTextGraph against the TextGraphStore contract (a fresh database per test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.text_graph import PostgresTextGraph
from kgrag_testing.contracts.text_graph import TextGraphStoreContract


@pytest.fixture
def documents(pg_dsn: str) -> Iterator[PostgresGraphStore]:
    with PostgresGraphStore.connect(pg_dsn) as store:
        yield store


@pytest.fixture
def text_graph(documents: PostgresGraphStore) -> PostgresTextGraph:
    return PostgresTextGraph(documents.pool, documents.installation_key)


class TestPostgresTextGraph(TextGraphStoreContract):
    pass
