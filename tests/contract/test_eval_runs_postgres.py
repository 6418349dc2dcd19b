"""PostgresEvalRuns against the EvalRunStore contract (a fresh database per test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgrag_adapters.postgres.eval_runs import PostgresEvalRuns
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_testing.contracts.eval_runs import EvalRunStoreContract


class TestPostgresEvalRuns(EvalRunStoreContract):
    @pytest.fixture
    def eval_runs(self, pg_dsn: str) -> Iterator[PostgresEvalRuns]:
        store = PostgresStore.connect(pg_dsn)
        try:
            yield store.eval_runs
        finally:
            store.close()
