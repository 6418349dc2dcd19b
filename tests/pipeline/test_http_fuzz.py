"""Property-based fuzzing of the whole HTTP API from its OpenAPI schema (schemathesis, every check).

The app runs in-process (ASGI) on the embedded default with a small corpus, and every operation is fuzzed
with an admin token and with a reader token. Zero failures allowed: no 5xx but a documented 503, every
status code documented, no schema-valid request refused, `Allow` on 405, no slow request. Examples per
operation are capped and generation is derandomized, so the run is bounded and the same every time.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from psycopg import sql
from psycopg.conninfo import make_conninfo
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.corpus import corpus

VERIFIER = TokenVerifier(key="fuzz-key-" + "x" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")
TOKENS = {
    "admin": VERIFIER.issue("root", groups=[], scopes=["admin"], ttl_s=3600),
    "reader": VERIFIER.issue("sam", groups=["engineering"], scopes=["search", "ask"], ttl_s=3600),
}
MAX_EXAMPLES = 12  # per operation, mode and token: bounds the whole module to about a minute on 2 cores
SLOW_S = 5.0  # "a few seconds": long work belongs in a background run


@pytest.fixture(scope="module")
def fuzz_app(
    pg_server_dsn: str, embedder: OnnxMiniLmEmbedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FastAPI]:
    # One app for the module: every operation's examples run against the same small, ingested index.
    name = f"kgrag_fuzz_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    data_dir: Path = tmp_path_factory.mktemp("fuzz") / "index"
    # No eval suite is installed here (an empty suites folder): a fuzzed POST /v1/admin/eval/run is answered
    # 404 rather than starting minutes of background indexing (tests/pipeline/test_eval_service_http.py
    # runs one).
    settings_ = KgragSettings(
        data_dir=data_dir,
        pg_dsn=make_conninfo(pg_server_dsn, dbname=name),
        max_document_bytes=20_000,
        eval_suites_dir=tmp_path_factory.mktemp("no-suites"),
    )
    try:
        with open_embedded(settings_, embedder=embedder) as kg:
            kg.ingest(corpus())
            yield create_app(kg, VERIFIER)
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


FUZZ = settings(
    max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
# The one check left out, and where: an ontology's cross-references (a relation naming an entity type the
# body does not define) cannot be said in JSON Schema, so a structurally valid ontology may still be refused
# with ONTOLOGY_INVALID. Every other check runs on every operation.
# Likewise whether base64 bytes are UTF-8 text (INVALID_UTF8) or non-empty: for `body_b64` bodies only.
EXCLUDED = {"PUT /v1/admin/ontology": [positive_data_acceptance]}
BYTES_BODY = "POST /v1/ingest/documents"
# And whether a filter's sources name documents the caller can read, or its days are in order
# (INVALID_FILTER): for bodies with `filters` only.
FILTERED = {"POST /v1/search", "POST /v1/ask"}


def fuzz_case(operation: Any, mode: GenerationMode, headers: dict[str, str]) -> Any:
    """A Hypothesis test sending `operation`'s generated cases and running every check on each answer."""
    excluded = EXCLUDED.get(operation.label)

    @FUZZ
    # The token is given to the strategy (not only to the call), so negative generation never "removes" it
    # from a case that then goes out with it anyway; the missing-auth check still sends each case without it.
    @given(case=operation.as_strategy(generation_mode=mode, headers=headers))
    def run(case: Any) -> None:
        started = time.perf_counter()
        skip = excluded
        if operation.label == BYTES_BODY and isinstance(case.body, dict) and "body_b64" in case.body:
            skip = [positive_data_acceptance]
        if operation.label in FILTERED and isinstance(case.body, dict) and case.body.get("filters"):
            skip = [positive_data_acceptance]
        case.call_and_validate(excluded_checks=skip)
        elapsed = time.perf_counter() - started
        assert elapsed < SLOW_S, f"took {elapsed:.1f} s"

    return run


def fuzz(app: FastAPI, role: str) -> list[str]:
    """Fuzz every operation in both generation modes; the failures, one line each (empty when clean).

    Operations are driven here rather than through schemathesis's pytest plugin (its lazy loader does
    not work with this pytest), so one shared app serves them all.
    """
    headers = {"Authorization": f"Bearer {TOKENS[role]}"}
    failures: list[str] = []
    for result in schemathesis.openapi.from_asgi("/openapi.json", app).get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run = fuzz_case(operation, mode, headers)
            try:
                run()
            except Unsatisfiable:
                # Nothing to negate (no parameters, or only ones every value of is valid): no case to send.
                assert mode is GenerationMode.NEGATIVE, operation.label
            except (Exception, BaseExceptionGroup) as err:  # noqa: BLE001 - a server error too: all are listed
                lines = [line.strip() for line in str(err).splitlines() if line.strip()]
                failures.append(f"{role} {mode.value} {operation.label}: " + " | ".join(lines[:14]))
    return failures


@pytest.mark.pipeline
@pytest.mark.parametrize("role", sorted(TOKENS))
def test_every_operation_survives_fuzzing(fuzz_app: FastAPI, role: str) -> None:
    failures = fuzz(fuzz_app, role)
    assert failures == [], "\n".join(failures)
