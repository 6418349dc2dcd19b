"""`OpenSearchKeywordIndex` against the KeywordIndex contract on a real OpenSearch, plus what only it shows.

The server comes from scripts/dev-services/services.sh: $KGRAG_TEST_OPENSEARCH_URL (set by
`source .cache/dev-services/env.sh`), else the address that script uses. An unreachable server FAILS these
tests (it never skips them). Every test uses indexes of its own (`kgrag-chunks-test-<uuid>-<n>`), deleted
afterwards, so tests may run against an OpenSearch that others use. The adapter puts the `kgrag-chunks`
index template on first use; it is versioned and idempotent, and the tests leave it in place.

Writes wait for a refresh (`refresh=wait_for`), and back-to-back writes wait one refresh_interval each (1 s in
the template). The contract suite therefore runs on indexes created from the template with a 100 ms interval;
the tests that let the adapter create its index run at the template's own settings.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from opensearchpy.exceptions import NotFoundError, TransportError

from kgrag_adapters.opensearch import keyword_index as os_module
from kgrag_adapters.opensearch.keyword_index import (
    DEFAULT_INDEX,
    MAX_QUERY_TERMS,
    TEMPLATE_FILE,
    TEMPLATE_NAME,
    OpenSearchKeywordIndex,
    load_template,
)
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.chunking import chunk_document
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.search import KeywordDoc
from kgrag_testing.contracts.keyword_index import (
    ALLOWED,
    DENIED,
    KeywordIndexContract,
    KeywordIndexFactory,
    chunk_ids,
    kdoc,
)

pytestmark = pytest.mark.integration

OPENSEARCH_URL = os.environ.get("KGRAG_TEST_OPENSEARCH_URL", "http://127.0.0.1:9200")
START_HINT = "bash scripts/dev-services/services.sh start opensearch  (then: source .cache/dev-services/env.sh)"
REPO_ROOT = Path(__file__).resolve().parents[2]
FAST_REFRESH = "100ms"
CORPUS = REPO_ROOT / "corpora" / "northwind"

NewName = Callable[[], str]


@pytest.fixture(scope="module")
def client() -> Iterator[OpenSearch]:
    conn = OpenSearch(hosts=[OPENSEARCH_URL], max_retries=0, timeout=30)
    problem = None
    try:
        conn.info()
    except TransportError as exc:  # connection errors are TransportErrors too
        problem = exc
    if problem is not None:  # failed outside the `except`, so the report is the hint, not a chained traceback
        conn.close()
        pytest.fail(
            f"OpenSearch at {OPENSEARCH_URL} is not reachable ({problem}). Start it: {START_HINT}", pytrace=False
        )
    yield conn
    conn.close()


@pytest.fixture
def new_name(client: OpenSearch) -> Iterator[NewName]:
    """Names of fresh indexes for this test (matching the template's patterns), deleted afterwards."""
    run = uuid.uuid4().hex[:12]
    made: list[str] = []

    def make() -> str:
        made.append(f"kgrag-chunks-test-{run}-{len(made)}")
        return made[-1]

    yield make
    for name in made:
        client.indices.delete(index=name, ignore_unavailable=True)


@pytest.fixture
def index_factory(client: OpenSearch, new_name: NewName) -> Iterator[KeywordIndexFactory]:
    # No local directory here: a path names an index, so opening the same path again reopens it.
    opened: list[OpenSearchKeywordIndex] = []
    by_path: dict[Path, str] = {}

    def make(path: Path | None = None) -> OpenSearchKeywordIndex:
        if path is None or path not in by_path:
            name = new_name()
            client.indices.create(index=name, body=_fast_refresh_index_body())
            if path is not None:
                by_path[path] = name
        else:
            name = by_path[path]
        index = OpenSearchKeywordIndex.connect(OPENSEARCH_URL, index=name)
        opened.append(index)
        return index

    yield make
    for index in opened:
        index.close()


def _fast_refresh_index_body() -> dict[str, Any]:
    """The template's index, refreshing every 100 ms instead of every second.

    Writes wait for the next refresh, so back-to-back writes take one refresh_interval each; the contract
    makes many small ones. The semantics (visible when the call returns) do not depend on the interval.
    The tests that create their index through the adapter run at the template's 1 s.
    """
    body: dict[str, Any] = load_template()["template"]
    body["settings"]["index"]["refresh_interval"] = FAST_REFRESH
    return body


class TestOpenSearchKeywordIndexContract(KeywordIndexContract):
    pass


# --- the template and the index ------------------------------------------------------------------------


def test_template_file_has_one_home() -> None:
    link = Path(os_module.__file__).parent / "schema"
    assert link.is_symlink()
    assert not Path(str(link.readlink())).is_absolute()  # relative, so it works in any checkout
    assert TEMPLATE_FILE.resolve() == (REPO_ROOT / "schemas" / "opensearch" / "chunks-template.json").resolve()
    template = load_template()
    assert template["index_patterns"] == ["kgrag-chunks*"]
    assert TEMPLATE_NAME == DEFAULT_INDEX == "kgrag-chunks"


def test_index_is_created_from_the_template_on_first_use(client: OpenSearch, new_name: NewName) -> None:
    name = new_name()
    index = OpenSearchKeywordIndex(client, name)
    assert not client.indices.exists(index=name)  # the constructor sends nothing
    assert index.count() == 0
    expected = load_template()
    stored = client.indices.get_index_template(name=TEMPLATE_NAME)["index_templates"][0]["index_template"]
    assert stored["version"] >= expected["version"]
    mappings = client.indices.get_mapping(index=name)[name]["mappings"]
    assert mappings["dynamic"] == "strict"
    for field, spec in expected["template"]["mappings"]["properties"].items():
        assert spec.items() <= mappings["properties"][field].items(), field
    settings = client.indices.get_settings(index=name)[name]["settings"]["index"]
    assert (settings["number_of_shards"], settings["number_of_replicas"], settings["refresh_interval"]) == (
        "1",
        "0",
        "1s",
    )
    assert settings["analysis"]["analyzer"]["kgrag_english"]["filter"] == [
        "kgrag_remove_long",
        "lowercase",
        "kgrag_english_stemmer",
    ]
    # _source keeps the keys only: the text lives in PostgreSQL, the index only finds and scores it.
    index.upsert([kdoc("c1", "body words", title="A title", breadcrumb="A > B")])
    source = client.get(index=name, id="c1")["_source"]
    assert source == {"chunk_id": "c1", "doc_id": "doc-1", "acl_class_id": ALLOWED, "source": "contract"}


def test_settings_can_be_overridden_when_the_index_is_created(client: OpenSearch, new_name: NewName) -> None:
    # Created by an operator with 3 shards; the template supplies the rest. The adapter uses it as it is.
    name = new_name()
    client.indices.create(index=name, body={"settings": {"index": {"number_of_shards": 3}}})
    with OpenSearchKeywordIndex.connect(OPENSEARCH_URL, index=name) as index:
        docs = [kdoc(f"tie-{i:02d}", "identical boilerplate paragraph") for i in range(30)]
        index.upsert(docs[::-1])
        assert index.count() == 30
        hits = index.search("boilerplate", [ALLOWED], 5)
    assert client.indices.get_settings(index=name)[name]["settings"]["index"]["number_of_shards"] == "3"
    # Identical chunks on different shards score the same (dfs_query_then_fetch: global statistics), so the
    # chunk_id tie-break decides, as on one shard.
    assert chunk_ids(hits) == ["tie-00", "tie-01", "tie-02", "tie-03", "tie-04"]
    assert len({h.score for h in hits}) == 1


def test_an_index_without_the_kgrag_mapping_is_refused(client: OpenSearch, new_name: NewName) -> None:
    name = new_name()
    # As if the ACL field had been mapped by someone else: analysed text makes the ACL filter inexact.
    client.indices.create(index=name, body={"mappings": {"properties": {"acl_class_id": {"type": "text"}}}})
    index = OpenSearchKeywordIndex(client, name)
    with pytest.raises(KgragError) as caught:
        index.search("anything", [ALLOWED], 10)
    assert caught.value.code is ErrorCode.CONFIGURATION_INVALID
    assert "acl_class_id" in caught.value.message
    assert caught.value.hint


def test_a_missing_index_outside_the_template_patterns_is_not_created(client: OpenSearch) -> None:
    name = f"kgrag-elsewhere-{uuid.uuid4().hex[:12]}"
    try:
        with pytest.raises(KgragError) as caught:
            OpenSearchKeywordIndex(client, name).count()
        assert caught.value.code is ErrorCode.CONFIGURATION_INVALID
        assert not client.indices.exists(index=name)
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)


@pytest.mark.parametrize(
    ("case", "put"), [("missing", True), ("unversioned", True), ("older", True), ("same", False), ("newer", False)]
)
def test_the_template_is_put_only_over_an_older_one(case: str, put: bool) -> None:
    template = load_template()
    version = template["version"]
    stored = {"unversioned": {}, "older": {"version": version - 1}, "same": {"version": version}}
    stored["newer"] = {"version": version + 1}
    fake = mock.MagicMock()
    if case == "missing":
        fake.indices.get_index_template.side_effect = NotFoundError(404, "resource_not_found_exception", {})
    else:
        found = {"name": TEMPLATE_NAME, "index_template": stored[case]}
        fake.indices.get_index_template.return_value = {"index_templates": [found]}
    os_module._put_template(fake, template)
    if put:
        fake.indices.put_index_template.assert_called_once_with(name=TEMPLATE_NAME, body=template)
    else:
        fake.indices.put_index_template.assert_not_called()


# --- analysis: parity with tantivy and the documented differences -----------------------------------------

_PARITY_TEXTS = (
    "Indexing the INDEXED documents, indexing!",
    "The quick brown foxes were jumping over the lazy dogs' kennels in 2024.",
    "Kubernetes pods restart on failure; operators' runbooks describe the escalation procedure.",
    "e-mail, C++, user@example.com, v2.3.1, 3.14159, snake_case and CamelCase identifiers",
    "ünïcödé ßtraße Ærøskøbing 東京 Москва naïve café résumé 🙂 x\x00y",
    "generously connected connections relational hopefully happiness running ran runs",
)


def test_query_analysis_matches_tantivy(index_factory: KeywordIndexFactory, tmp_path: Path) -> None:
    index = index_factory()
    assert isinstance(index, OpenSearchKeywordIndex)
    with TantivyKeywordIndex(tmp_path / "k") as twin:
        expected = {text: twin.query_terms(text) for text in _PARITY_TEXTS}
    assert {text: index.query_terms(text) for text in _PARITY_TEXTS} == expected


# (text, tantivy's terms, OpenSearch's terms). See `_meta.known_differences_from_tantivy` in the template.
_KNOWN_DIFFERENCES: tuple[tuple[str, list[str], list[str]], ...] = (
    # Lucene 9 bundles an older Snowball English than tantivy (which has its R1 exceptions and undoubling fixes).
    ("organization", ["organiz"], ["organ"]),
    ("paste", ["paste"], ["past"]),
    ("added", ["add"], ["ad"]),
    ("internal", ["internal"], ["intern"]),
    ("meteorologist", ["meteorolog"], ["meteorologist"]),
    # The long-token cut: 40+ UTF-8 bytes in tantivy, 40+ UTF-16 units here (this is 18 units, 54 bytes).
    ("韓国語のテキストをサポートしています", [], ["韓国語のテキストをサポートしています"]),
    # Lowercasing: full Unicode mapping in Rust, one code point at a time in Java.
    ("İ", ["i̇"], ["i"]),
)


def test_documented_analysis_differences_from_tantivy(index_factory: KeywordIndexFactory, tmp_path: Path) -> None:
    index = index_factory()
    assert isinstance(index, OpenSearchKeywordIndex)
    with TantivyKeywordIndex(tmp_path / "k") as twin:
        seen = [(text, twin.query_terms(text), index.query_terms(text)) for text, _, _ in _KNOWN_DIFFERENCES]
    assert seen == list(_KNOWN_DIFFERENCES)
    # Each engine analyses queries with its own indexing chain, so both stay self-consistent: the only effect
    # is which inflections conflate ("organic" meets "organization" here, not in tantivy).
    index.upsert([kdoc("c1", "The organization grew."), kdoc("c2", "unrelated words")])
    assert chunk_ids(index.search("organizations", [ALLOWED], 10)) == ["c1"]
    assert chunk_ids(index.search("organic", [ALLOWED], 10)) == ["c1"]


def _northwind_chunks() -> list[KeywordDoc]:
    chunks: list[KeywordDoc] = []
    for line in (CORPUS / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        body = raw["text"].encode("utf-8")
        for span in chunk_document(raw["text"], title=raw["title"]):
            chunks.append(
                KeywordDoc(
                    chunk_id=f"{raw['id']}#{span.seq:03d}",
                    doc_id=raw["id"],
                    acl_class_id=ALLOWED,
                    title=raw["title"],
                    breadcrumb=" > ".join(span.breadcrumb),
                    text=body[span.start_byte : span.end_byte].decode("utf-8"),
                    source="northwind",
                )
            )
    return chunks


def test_rankings_match_tantivy_on_the_northwind_corpus(index_factory: KeywordIndexFactory, tmp_path: Path) -> None:
    # Same analysis and the same BM25: with a title and a breadcrumb on every chunk (as the chunker makes
    # them), both engines rank every question's top 10 alike, with scores equal to float32 rounding.
    chunks = _northwind_chunks()
    questions = [json.loads(line)["question"] for line in (CORPUS / "questions.jsonl").read_text().splitlines()]
    assert len(chunks) > 400
    assert len(questions) > 50
    index = index_factory()
    index.upsert(chunks)
    with TantivyKeywordIndex(tmp_path / "k") as twin:
        twin.upsert(chunks)
        for question in questions:
            expected, got = twin.search(question, [ALLOWED], 10), index.search(question, [ALLOWED], 10)
            assert chunk_ids(got) == chunk_ids(expected), question
            assert [h.score for h in got] == pytest.approx([h.score for h in expected], rel=1e-5), question


def test_query_terms_are_bounded(index_factory: KeywordIndexFactory, tmp_path: Path) -> None:
    index = index_factory()
    assert isinstance(index, OpenSearchKeywordIndex)
    query = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS * 3))
    with TantivyKeywordIndex(tmp_path / "k") as twin:
        assert index.query_terms(query) == twin.query_terms(query)
    assert len(index.query_terms(query)) == MAX_QUERY_TERMS
    index.upsert([kdoc("c1", "w0 w1")])
    assert chunk_ids(index.search(query, [ALLOWED], 10)) == ["c1"]


def test_a_query_past_the_analyze_token_limit_is_analysed_in_pieces(index_factory: KeywordIndexFactory) -> None:
    index = index_factory()
    assert isinstance(index, OpenSearchKeywordIndex)
    # 15,001 tokens: one _analyze request may produce at most 10,000 (index.analyze.max_token_count).
    query = "a " * 15_000 + "zebras"
    assert index.query_terms(query) == ["a", "zebra"]
    index.upsert([kdoc("c1", "a zebra crossing"), kdoc("c2", "no match here")])
    assert chunk_ids(index.search(query, [ALLOWED], 10)) == ["c1"]


def test_query_pieces_are_cut_between_tokens() -> None:
    text = "crossing, zebras; " * 1000  # 18,000 characters
    pieces = list(os_module._pieces(text, 8000))
    assert "".join(pieces) == text
    assert all(len(p) <= 8000 and not p[-1].isalnum() for p in pieces)
    assert [len(p) for p in os_module._pieces("x" * 20_000, 8000)] == [8000, 8000, 4000]
    assert list(os_module._pieces("", 8000)) == []
    assert list(os_module._pieces("   ", 8000)) == []


# --- requests ------------------------------------------------------------------------------------------


def test_search_request_keeps_the_acl_filter_inside_the_query(client: OpenSearch, new_name: NewName) -> None:
    index = OpenSearchKeywordIndex(client, new_name())
    index.upsert([kdoc("a", "budget report"), kdoc("d", "budget budget report", acl=DENIED)])
    with mock.patch.object(client, "search", wraps=client.search) as search:
        hits = index.search("Budget title:secret", [ALLOWED, ALLOWED, "acl_other"], 1)
    assert chunk_ids(hits) == ["a"]
    (only,) = search.call_args_list
    body = only.kwargs["body"]
    query = body["query"]["bool"]
    assert query["filter"] == [{"terms": {"acl_class_id": [ALLOWED, "acl_other"]}}]
    (matches,) = query["must"]
    # The user's text only reaches OpenSearch as analysed terms, each a `term` query per field.
    assert matches["bool"]["should"] == [
        {"term": {field: {"value": term, "boost": boost}}}
        for term in ("budget", "titl", "secret")
        for field, boost in (("text", 1.0), ("title", 2.0), ("breadcrumb", 1.5))
    ]
    assert body["sort"] == [{"_score": {"order": "desc"}}, {"chunk_id": {"order": "asc"}}]
    assert body["track_scores"] is True
    assert body["size"] == 1
    assert only.kwargs["search_type"] == "dfs_query_then_fetch"


def test_writes_are_batched_and_wait_for_a_refresh(client: OpenSearch, new_name: NewName) -> None:
    index = OpenSearchKeywordIndex(client, new_name())
    docs = [kdoc(f"c{i:04d}", f"word{i}", doc_id="doc-big") for i in range(2500)]
    with mock.patch.object(client, "bulk", wraps=client.bulk) as bulk:
        index.upsert(docs)
    assert [_actions(c, "index") for c in bulk.call_args_list] == [1000, 1000, 500]
    assert all(c.kwargs["refresh"] == "wait_for" for c in bulk.call_args_list)
    # Visible as soon as the call returns, with no explicit refresh.
    assert index.count() == 2500
    assert index.ids_for_doc("doc-big") == [d.chunk_id for d in docs]  # pages of 1000 via search_after
    with mock.patch.object(client, "bulk", wraps=client.bulk) as bulk:
        index.delete([d.chunk_id for d in docs[:1200]])
    assert [_actions(c, "delete") for c in bulk.call_args_list] == [1000, 200]
    assert all(c.kwargs["refresh"] == "wait_for" for c in bulk.call_args_list)
    assert index.count() == 1300


def _actions(call: Any, op_type: str) -> int:
    """How many `op_type` actions one recorded bulk request carried (its body is NDJSON)."""
    lines = [json.loads(line) for line in call.kwargs["body"].splitlines() if line]
    return sum(1 for line in lines if set(line) == {op_type})


def test_a_refused_document_raises_index_write_failed(client: OpenSearch, new_name: NewName) -> None:
    index = OpenSearchKeywordIndex(client, new_name())
    # A keyword longer than Lucene's term limit (32,766 bytes) is refused for that one document.
    bad = kdoc("bad-chunk", "text", doc_id="x" * 40_000)
    with pytest.raises(KgragError) as caught:
        index.upsert([kdoc("good-1", "text"), bad, kdoc("good-2", "text")])
    assert caught.value.code is ErrorCode.INDEX_WRITE_FAILED
    assert "1 of 3" in caught.value.message
    assert "'bad-chunk'" in caught.value.message
    # The others were written; the failure names what to do.
    assert index.count() == 2
    assert caught.value.hint


def test_connection_errors_propagate() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port any more: the client fails at once (it does not retry) and the error is
    # the driver's own, for the caller's retry policy to recognise.
    with OpenSearchKeywordIndex.connect(f"http://127.0.0.1:{port}") as index, pytest.raises(OpenSearchConnectionError):
        index.count()


# --- lifecycle -----------------------------------------------------------------------------------------


def test_rejects_a_bare_string_as_acl_list(index_factory: KeywordIndexFactory) -> None:
    with pytest.raises(TypeError):
        index_factory().search("text", ALLOWED, 10)


def test_closed_index_refuses_work(client: OpenSearch) -> None:
    index = OpenSearchKeywordIndex.connect(OPENSEARCH_URL, index="kgrag-chunks-never-created")
    index.close()
    index.close()
    with pytest.raises(RuntimeError, match="closed"):
        index.count()
    assert not client.indices.exists(index="kgrag-chunks-never-created")


def test_a_client_passed_in_stays_open(client: OpenSearch, new_name: NewName) -> None:
    first, second = new_name(), new_name()
    with OpenSearchKeywordIndex(client, first) as one:
        one.upsert([kdoc("c1", "words")])
    assert client.info()["version"]["distribution"] == "opensearch"
    # Two indexes can share one client.
    with OpenSearchKeywordIndex(client, first) as again, OpenSearchKeywordIndex(client, second) as other:
        assert (again.count(), other.count()) == (1, 0)


def test_connect_needs_user_and_password_together() -> None:
    with pytest.raises(ValueError, match="user and password"):
        OpenSearchKeywordIndex.connect(OPENSEARCH_URL, user="admin")
    with pytest.raises(ValueError, match="user and password"):
        OpenSearchKeywordIndex.connect(OPENSEARCH_URL, password="secret")
