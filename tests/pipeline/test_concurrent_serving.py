"""Readers run concurrently with each other and with the single writer (issue 10, concurrency).

Real engines throughout (PostgreSQL, Qdrant Edge, tantivy, the ONNX model); the only fake is the chat
model, a scripted FAKE that blocks until the test lets it answer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.acl import Caller
from kgrag_core.documents import SourceDocument
from kgrag_core.ports import ChatMessage
from kgrag_core.search import SearchResponse
from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from kgrag_testing.scripted_llm import ScriptedChatModel
from tests.pipeline.corpus import doc
from tests.pipeline.test_http_api import VERIFIER, bearer

DOCS = 8
WAIT_S = 60.0  # bound on every wait; a healthy run needs a fraction of it
READER = Caller(user="reader", groups=(), admin=True)


def report(i: int, version: int) -> SourceDocument:
    """A document of several chunks; every chunk names its document and its version."""
    word = ["one", "two"][version - 1]
    sections = "\n\n".join(
        f"## Part {p}\n\nKestrel report {i} part {p}, version {word}. The kestrel survey counted "
        f"{version * 10 + p} nests along the ridge in this version {word} of the kestrel report."
        for p in range(4)
    )
    return doc(f"report-{i}", f"# Kestrel report {i}\n\n{sections}\n", title=f"Kestrel report {i}")


@pytest.fixture
def settings(tmp_path: Path, pg_dsn: str) -> KgragSettings:
    # Small chunks so each document has several: a half-visible document would show in one response.
    return KgragSettings(
        data_dir=tmp_path / "index",
        pg_dsn=pg_dsn,
        chunk_max_tokens=32,
        chunk_overlap_tokens=4,
        extraction_enabled=False,
        answer_cache_ttl_s=0,
    )


@pytest.fixture
def kg(settings: KgragSettings, embedder: OnnxMiniLmEmbedder) -> Iterator[KgragApp]:
    with open_embedded(settings, embedder=embedder) as app:
        yield app


def chunk_ids(kg: KgragApp, doc_id: str) -> frozenset[str]:
    return frozenset(c.chunk_id for c in kg.searcher.documents.chunks_of(doc_id))


def test_searches_during_an_ingest_see_only_committed_documents(kg: KgragApp) -> None:
    kg.ingest([report(i, 1) for i in range(DOCS)])
    before = {f"report-{i}": chunk_ids(kg, f"report-{i}") for i in range(DOCS)}
    texts = {c.chunk_id: c.text for i in range(DOCS) for c in kg.searcher.documents.chunks_of(f"report-{i}")}
    assert all(len(ids) >= 3 for ids in before.values())

    ingest_running = threading.Event()
    ingest_done = threading.Event()
    errors: list[BaseException] = []
    during: list[SearchResponse] = []
    lock = threading.Lock()

    def writer() -> None:
        try:
            ingest_running.set()
            for i in range(DOCS):  # one commit per call: many committed states for the readers to see
                kg.ingest([report(i, 2)])
        except BaseException as err:  # noqa: BLE001 - reported by the assertion below
            errors.append(err)
        finally:
            ingest_done.set()

    def reader(query: str) -> None:
        ingest_running.wait(WAIT_S)
        try:
            while not ingest_done.is_set():
                response = kg.search(query, READER, top_k=20)
                assert isinstance(response, SearchResponse)
                if not ingest_done.is_set():
                    with lock:
                        during.append(response)
        except BaseException as err:  # noqa: BLE001 - reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(q,)) for q in ("kestrel report nests", "version two ridge", "part 2")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S * 4)
    assert not any(t.is_alive() for t in threads)
    assert errors == []

    after = {f"report-{i}": chunk_ids(kg, f"report-{i}") for i in range(DOCS)}
    texts |= {c.chunk_id: c.text for i in range(DOCS) for c in kg.searcher.documents.chunks_of(f"report-{i}")}
    assert all(len(after[d] - before[d]) >= 3 for d in before)  # every document really changed
    # Reads ran while the writer held the gate: searches completed during the ingest.
    assert len(during) >= 3
    saw_old = saw_new = False
    for response in during:
        by_doc: dict[str, set[str]] = {}
        for hit in response.hits:
            by_doc.setdefault(hit.doc_id, set()).add(hit.chunk_id)
            assert hit.text == texts[hit.chunk_id]  # exactly a committed chunk's text
        for doc_id, ids in by_doc.items():
            # Every document in a response is in one committed version, never half of each.
            assert ids <= before[doc_id] or ids <= after[doc_id], (doc_id, ids)
            saw_old |= bool(ids - after[doc_id])
            saw_new |= bool(ids - before[doc_id])
    assert saw_old and saw_new  # the readers saw the data change under them


def test_an_ask_waiting_on_its_llm_does_not_delay_a_search(settings: KgragSettings, embedder) -> None:  # type: ignore[no-untyped-def]
    llm_called = threading.Event()
    release = threading.Event()

    def responder(_: Sequence[ChatMessage]) -> str:
        llm_called.set()
        release.wait(WAIT_S)
        return '{"insufficient_evidence": true, "sentences": []}'

    model = ScriptedChatModel(responder)
    with open_embedded(settings, embedder=embedder, llm=model) as kg, TestClient(create_app(kg, VERIFIER)) as client:
        kg.ingest([report(i, 1) for i in range(2)])
        headers = bearer("sam", [], ["search", "ask"])
        answers: list[int] = []
        asking = threading.Thread(
            target=lambda: answers.append(
                client.post("/v1/ask", json={"question": "How many kestrel nests?"}, headers=headers).status_code
            )
        )
        asking.start()
        try:
            assert llm_called.wait(WAIT_S)
            search = client.post("/v1/search", json={"query": "kestrel nests"}, headers=headers)
            assert search.status_code == 200
            assert search.json()["hits"]  # a real answer, not an early error
            assert asking.is_alive() and not answers  # the ask is still waiting on its model
        finally:
            release.set()
            asking.join(WAIT_S)
        assert answers == [200]
        assert len(model.calls) == 1
