"""`Neo4jLexicalGraph` against the `LexicalGraph` contract on a real Neo4j 5 server, plus Neo4j specifics.

Needs the server of the dev services (`scripts/dev-services/services.sh start neo4j`, then
`source .cache/dev-services/env.sh` for $KGRAG_TEST_NEO4J_URI; without it, bolt://127.0.0.1:7687). These
tests FAIL, never skip, when it cannot be reached.

The tests own the server's database: Community Edition has a single user database, so isolation is a wipe
(`MATCH (n) DETACH DELETE n`) before each test. Point $KGRAG_TEST_NEO4J_URI at nothing you want to keep.
Two pytest processes on one server would wipe each other's data, so this module holds an exclusive file
lock (`tests/neo4j_lock.py`) for as long as it runs; other suites writing to the same server should take it too.
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, LiteralString

import pytest
from neo4j import Driver, GraphDatabase, NotificationMinimumSeverity, Session
from neo4j.exceptions import ClientError, ServiceUnavailable
from neo4j.time import DateTime

from kgrag_adapters.neo4j import lexical_graph as neo4j_module
from kgrag_adapters.neo4j.lexical_graph import (
    QUERIES,
    SCHEMA_FILE,
    LexicalGraphInconsistentError,
    Neo4jLexicalGraph,
    load_schema_statements,
)
from kgrag_core.documents import Chunk, DocumentStatus, StoredDocument
from kgrag_testing.contracts.document_store import make_document
from kgrag_testing.contracts.lexical_graph import (
    RUN_1,
    RUN_2,
    LexicalGraphContract,
    counts,
    ids,
    sections,
    upsert,
)
from tests.neo4j_lock import neo4j_held

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_URI = "bolt://127.0.0.1:7687"
START_HINT = "scripts/dev-services/services.sh start neo4j"

CONSTRAINTS = {
    # the lexical graph, keyed per namespace like the knowledge graph
    "document_key": (["Document"], ["ns", "doc_id"]),
    "chunk_key": (["Chunk"], ["ns", "chunk_id"]),
    # the knowledge-graph projection (kgrag_adapters.neo4j.knowledge_graph), keyed per namespace
    "kg_entity_key": (["KgEntity"], ["ns", "entity_id"]),
    "kg_canonical_key": (["KgCanonical"], ["ns", "canonical_id"]),
    "kg_name_key": (["KgName"], ["ns", "norm"]),
    "kg_doc_key": (["KgDoc"], ["ns", "doc_id"]),
    "kg_claim_key": (["KgClaim"], ["ns", "claim_id"]),
    "kg_hub_key": (["KgHub"], ["ns", "entity_id"]),
    "kg_ontology_key": (["KgOntology"], ["ns"]),
    "kg_watermark_key": (["KgWatermark"], ["ns"]),
    # the communities and text-graph projections (kgrag_adapters.neo4j.communities, .text_graph)
    "kg_community_key": (["KgCommunity"], ["ns", "community_id"]),
    "kg_community_entity_key": (["KgCommunityEntity"], ["ns", "entity_id"]),
    "tg_node_key": (["TgNode"], ["ns", "node_key"]),
    "tg_passage_key": (["TgPassage"], ["ns", "chunk_id"]),
}
INDEXES = {
    **CONSTRAINTS,  # each uniqueness constraint owns a range index of the same name
    "chunk_ns_doc_id": (["Chunk"], ["ns", "doc_id"]),
    "document_ns_acl_class_id": (["Document"], ["ns", "acl_class_id"]),
    "kg_entity_canonical_id": (["KgEntity"], ["ns", "canonical_id"]),
    "kg_entity_norm_name": (["KgEntity"], ["ns", "norm_name"]),
    "kg_claim_entity_id": (["KgClaim"], ["ns", "entity_id"]),
    "chunk_ns_acl_class_id": (["Chunk"], ["ns", "acl_class_id"]),
    "tg_passage_doc_id": (["TgPassage"], ["ns", "doc_id"]),
    "tg_synonym_doc_id": (["TG_SYNONYM"], ["ns", "doc_id"]),
}
# The rules from before namespaces (keys without `ns`): the schema drops them, or a second namespace could
# not hold the same IDs. Constraint names first, then plain indexes.
LEGACY_CONSTRAINTS = {
    "document_doc_id_unique": "FOR (d:Document) REQUIRE d.doc_id IS UNIQUE",
    "chunk_chunk_id_unique": "FOR (c:Chunk) REQUIRE c.chunk_id IS UNIQUE",
}
LEGACY_INDEXES = {
    "chunk_doc_id": "FOR (c:Chunk) ON (c.doc_id)",
    "document_acl_class_id": "FOR (d:Document) ON (d.acl_class_id)",
    "chunk_acl_class_id": "FOR (c:Chunk) ON (c.acl_class_id)",
}


def _uri() -> str:
    return os.environ.get("KGRAG_TEST_NEO4J_URI") or DEFAULT_URI


def _quiet(driver: Driver, database: str | None = None) -> Session:
    """A session without server notifications (see the adapter's docstring)."""
    return driver.session(database=database, notifications_min_severity=NotificationMinimumSeverity.OFF)


def _query(graph: Neo4jLexicalGraph, query: LiteralString, **params: Any) -> list[dict[str, Any]]:
    with _quiet(graph.driver, graph.database) as session:
        return [record.data() for record in session.run(query, params)]


@pytest.fixture(scope="module")
def neo4j_owned() -> Iterator[str]:
    """The server's URI, with the test lock held (see the module docstring)."""
    with neo4j_held(_uri()) as uri:
        yield uri


@pytest.fixture(scope="module")
def neo4j_graph(neo4j_owned: str) -> Iterator[Neo4jLexicalGraph]:
    uri = neo4j_owned
    try:
        graph = Neo4jLexicalGraph.connect(uri)
    except ServiceUnavailable as exc:
        pytest.fail(
            f"no Neo4j server at {uri}: {exc}\nStart it with `{START_HINT}` (then `source "
            ".cache/dev-services/env.sh`). These tests fail rather than skip.",
            pytrace=False,
        )
    with graph:
        yield graph
        _wipe(graph)  # leave the server empty for whoever takes the lock next


def _wipe(graph: Neo4jLexicalGraph) -> None:
    with _quiet(graph.driver, graph.database) as session:
        session.run("MATCH (n) DETACH DELETE n").consume()


@pytest.fixture
def graph(neo4j_graph: Neo4jLexicalGraph) -> Neo4jLexicalGraph:
    """The module's graph, wiped: empty when the test starts (the schema stays)."""
    _wipe(neo4j_graph)
    return neo4j_graph


class Neo4jProbe:
    def __init__(self, graph: Neo4jLexicalGraph) -> None:
        self._graph = graph

    def from_document_run_ids(self, doc_id: str) -> dict[str, list[str]]:
        rows = _query(
            self._graph,
            "MATCH (c:Chunk)-[f:FROM_DOCUMENT]->(:Document {doc_id: $doc_id})"
            " RETURN c.chunk_id AS chunk_id, collect(f.run_id) AS runs",
            doc_id=doc_id,
        )
        return {row["chunk_id"]: row["runs"] for row in rows}


@pytest.fixture
def graph_probe(graph: Neo4jLexicalGraph) -> Neo4jProbe:
    return Neo4jProbe(graph)


class TestNeo4jLexicalGraphContract(LexicalGraphContract):
    pass


def _all_at_once(calls: Sequence[Callable[[], None]]) -> None:
    """Run the calls in threads released together; re-raise the first failure."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], None]) -> None:
        barrier.wait()
        call()

    with ThreadPoolExecutor(len(calls)) as pool:
        for future in [pool.submit(run, call) for call in calls]:
            future.result()


def _invariant_violations(graph: Neo4jLexicalGraph) -> list[dict[str, Any]]:
    """Rows that break the lexical graph's shape; empty when the graph is well formed."""
    return _query(
        graph,
        """
        MATCH (c:Chunk)
        WHERE COUNT { (c)-[:FROM_DOCUMENT]->() } <> 1
           OR NOT EXISTS { (c)-[:FROM_DOCUMENT]->(:Document {doc_id: c.doc_id}) }
           OR COUNT { (c)-[:NEXT_CHUNK]->() } > 1
           OR COUNT { (c)<-[:NEXT_CHUNK]-() } > 1
        RETURN 'chunk' AS kind, c.chunk_id AS id
        UNION ALL
        MATCH (a:Chunk)-[:NEXT_CHUNK]->(b:Chunk)
        WHERE a.doc_id <> b.doc_id OR a.seq >= b.seq
        RETURN 'next_chunk' AS kind, a.chunk_id AS id
        UNION ALL
        MATCH (n)
        WHERE NOT n:Chunk AND NOT n:Document
        RETURN 'stray node' AS kind, elementId(n) AS id
        """,
    )


# --- schema -------------------------------------------------------------------------------------------------


def test_schema_file_has_one_home() -> None:
    link = Path(neo4j_module.__file__).parent / "schema"
    assert link.is_symlink()
    assert not Path(str(link.readlink())).is_absolute()  # relative, so it works in any checkout
    assert SCHEMA_FILE.resolve() == (REPO_ROOT / "schemas" / "neo4j" / "constraints.cypher").resolve()


def test_schema_statements_are_idempotent_ddl() -> None:
    statements = load_schema_statements()
    assert len(statements) == len(INDEXES) + len(LEGACY_CONSTRAINTS) + len(LEGACY_INDEXES)
    for statement in statements:
        if statement.startswith("DROP "):
            name = statement.split()[2]
            assert statement == f"DROP {'CONSTRAINT' if name in LEGACY_CONSTRAINTS else 'INDEX'} {name} IF EXISTS"
            continue
        assert statement.startswith(("CREATE CONSTRAINT ", "CREATE INDEX ")), statement
        assert " IF NOT EXISTS " in statement, statement
        assert "//" not in statement
        assert ";" not in statement


def test_a_schema_file_without_statements_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "constraints.cypher"
    empty.write_text("// nothing here\n  // nor here\n;\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="no schema statements"):
        load_schema_statements(empty)


def test_schema_is_applied_and_online(graph: Neo4jLexicalGraph) -> None:
    constraints = _query(graph, "SHOW CONSTRAINTS YIELD name, type, labelsOrTypes, properties")
    found = {c["name"]: (c["labelsOrTypes"], c["properties"]) for c in constraints if c["name"] in CONSTRAINTS}
    assert found == CONSTRAINTS
    assert {c["type"] for c in constraints if c["name"] in CONSTRAINTS} == {"UNIQUENESS"}
    indexes = _query(graph, "SHOW INDEXES YIELD name, type, labelsOrTypes, properties, state")
    mine = {i["name"]: i for i in indexes if i["name"] in INDEXES}
    assert {name: (i["labelsOrTypes"], i["properties"]) for name, i in mine.items()} == INDEXES
    assert {(i["type"], i["state"]) for i in mine.values()} == {("RANGE", "ONLINE")}
    assert not {i["name"] for i in indexes} & (LEGACY_CONSTRAINTS.keys() | LEGACY_INDEXES.keys())


def test_connect_drops_the_keys_from_before_namespaces(graph: Neo4jLexicalGraph) -> None:
    # A database a pre-namespace release set up: its key on doc_id alone would refuse a second namespace's
    # document of the same ID. (Its own rules would clash with the new ones on the same label, so these are
    # made after dropping them, exactly as the old release left them.)
    with _quiet(graph.driver, graph.database) as session:
        for name in CONSTRAINTS.keys() & {"document_key", "chunk_key"}:
            session.run(f"DROP CONSTRAINT {name} IF EXISTS").consume()
        for name, rule in LEGACY_CONSTRAINTS.items():
            session.run(f"CREATE CONSTRAINT {name} IF NOT EXISTS {rule}").consume()
        for name, rule in LEGACY_INDEXES.items():
            session.run(f"CREATE INDEX {name} IF NOT EXISTS {rule}").consume()
    try:
        with Neo4jLexicalGraph.connect(_uri()):
            pass
    finally:
        graph.ensure_schema()
    names = {i["name"] for i in _query(graph, "SHOW INDEXES YIELD name")}
    assert names >= INDEXES.keys()
    assert not names & (LEGACY_CONSTRAINTS.keys() | LEGACY_INDEXES.keys())
    other = Neo4jLexicalGraph(graph.driver, graph.database, namespace="other-deployment")
    upsert(graph, "doc-1", ["one"])
    upsert(other, "doc-1", ["one"])  # the same IDs in another namespace: refused under the old keys
    assert graph.counts() == other.counts() == counts(1, 1, 0, 1)


def test_applying_the_schema_again_changes_nothing(graph: Neo4jLexicalGraph) -> None:
    def schema() -> list[dict[str, Any]]:
        return _query(graph, "SHOW INDEXES YIELD name, type, labelsOrTypes, properties RETURN * ORDER BY name")

    before = schema()
    graph.ensure_schema()
    with Neo4jLexicalGraph.connect(_uri()):
        pass
    assert schema() == before


def test_racing_schema_application_succeeds(graph: Neo4jLexicalGraph) -> None:
    # Several services connecting at once to a fresh database: IF NOT EXISTS alone is not enough there
    # (the losers of the race fail with EquivalentSchemaRuleAlreadyExists); the adapter absorbs it.
    try:
        for _ in range(3):
            with _quiet(graph.driver, graph.database) as session:
                for name in CONSTRAINTS:
                    session.run(f"DROP CONSTRAINT {name} IF EXISTS").consume()
                for name in INDEXES.keys() - CONSTRAINTS.keys():
                    session.run(f"DROP INDEX {name} IF EXISTS").consume()
            _all_at_once([lambda: Neo4jLexicalGraph(graph.driver, graph.database).ensure_schema()] * 6)
    finally:
        graph.ensure_schema()
    names = {i["name"] for i in _query(graph, "SHOW INDEXES YIELD name")}
    assert names >= INDEXES.keys()


# --- what the graph stores ----------------------------------------------------------------------------------


def test_node_and_relationship_properties(graph: Neo4jLexicalGraph) -> None:
    doc, chunks = make_document("doc-1", ["alpha beta", "gamma"], version=3, title="Guide")
    before = time.time()
    graph.upsert_document(doc, chunks, RUN_1)
    (stored_doc,) = _query(graph, "MATCH (d:Document) RETURN properties(d) AS p")
    updated_at = stored_doc["p"].pop("updated_at")
    assert isinstance(updated_at, DateTime)
    assert updated_at.to_native().timestamp() >= before - 5  # the server's clock, so some slack
    assert stored_doc["p"] == {
        "ns": graph.namespace,
        "doc_id": "doc-1",
        "title": "Guide",
        "uri": doc.uri,
        "source": doc.source,
        "version": 3,
        "content_hash": doc.content_hash,
        "acl_class_id": doc.acl_class_id,
        "status": DocumentStatus.ACTIVE.value,
        "run_id": RUN_1,
    }
    rows = _query(graph, "MATCH (c:Chunk) RETURN properties(c) AS p ORDER BY c.seq")
    # The graph is a navigator: no chunk text (PostgreSQL holds it).
    assert [row["p"] for row in rows] == [
        {
            "ns": graph.namespace,
            "chunk_id": c.chunk_id,
            "doc_id": "doc-1",
            "seq": c.seq,
            "start_byte": c.start_byte,
            "end_byte": c.end_byte,
            "content_hash": c.content_hash,
            "acl_class_id": c.acl_class_id,
            "section_path": "Guide > Section " + str(c.seq),
            "token_count": c.token_count,
            "run_id": RUN_1,
        }
        for c in chunks
    ]
    rels = _query(graph, "MATCH ()-[r]->() RETURN type(r) AS type, properties(r) AS p")
    assert sorted((r["type"], r["p"]) for r in rels) == [
        ("FROM_DOCUMENT", {"ns": graph.namespace, "run_id": RUN_1}),
        ("FROM_DOCUMENT", {"ns": graph.namespace, "run_id": RUN_1}),
        ("NEXT_CHUNK", {"ns": graph.namespace, "run_id": RUN_1}),
    ]


def test_every_write_carries_the_latest_run_id(graph: Neo4jLexicalGraph) -> None:
    doc, chunks = upsert(graph, "doc-1", sections("a", 4), run_id=RUN_1)
    graph.upsert_document(doc, chunks, RUN_2)
    rows = _query(
        graph,
        "MATCH (n) RETURN n.run_id AS run UNION ALL MATCH ()-[r]->() RETURN r.run_id AS run",
    )
    assert len(rows) == 1 + 4 + 3 + 4
    assert {row["run"] for row in rows} == {RUN_2}


def test_properties_of_other_writers_survive_a_reupsert(graph: Neo4jLexicalGraph) -> None:
    # The knowledge-graph work may add properties to Document nodes; a re-upsert replaces only its own.
    doc, chunks = upsert(graph, "doc-1", ["one"])
    _query(graph, "MATCH (d:Document {doc_id: 'doc-1'}) SET d.entity_count = 7")
    graph.upsert_document(dataclasses.replace(doc, title="New title"), chunks, RUN_2)
    assert _query(graph, "MATCH (d:Document) RETURN d.title AS title, d.entity_count AS n") == [
        {"title": "New title", "n": 7}
    ]


def test_queries_raise_no_server_notifications(graph: Neo4jLexicalGraph) -> None:
    # Deprecations, cartesian products, unsupported hints...: whatever the server would report about the
    # adapter's Cypher (the adapter's own sessions ask for none). After one upsert every label, type and
    # property key exists, so "unknown label/property" warnings cannot hide a real one either.
    doc, chunks = upsert(graph, "doc-1", sections("a", 3))
    params = {
        "ns": graph.namespace,
        "doc_id": "doc-1",
        "run_id": RUN_1,
        "props": {"title": doc.title},
        "chunk_ids": [c.chunk_id for c in chunks],
        "chunks": [{"chunk_id": c.chunk_id, "doc_id": "doc-1", "seq": c.seq} for c in chunks],
        "links": [{"prev": chunks[0].chunk_id, "next": chunks[1].chunk_id}],
        "seconds": 1,
    }
    assert set(QUERIES) >= {"upsert_document", "delete_chunks", "delete_document", "chain_of_document", "counts"}
    with graph.driver.session(
        database=graph.database, notifications_min_severity=NotificationMinimumSeverity.INFORMATION
    ) as session:
        for name, query in QUERIES.items():
            summary = session.run("EXPLAIN " + query, params).consume()
            notes = [(n.gql_status, n.status_description) for n in summary.gql_status_objects if n.is_notification]
            assert notes == [], name


# --- namespaces ---------------------------------------------------------------------------------------------


def test_two_namespaces_do_not_see_each_others_nodes(graph: Neo4jLexicalGraph) -> None:
    """Two deployments on Community Edition's one database (KGRAG_NEO4J_NAMESPACE): the same document IDs,
    each namespace reads, counts, deletes and drops only its own nodes."""
    other = Neo4jLexicalGraph(graph.driver, graph.database, namespace="other-deployment")
    _, mine = upsert(graph, "doc-1", sections("mine", 3))
    _, theirs = upsert(other, "doc-1", sections("theirs", 2), run_id=RUN_2)
    upsert(other, "doc-2", ["only theirs"], run_id=RUN_2)
    # Positive control: each sees its own document, whole.
    assert graph.chunk_ids("doc-1") == ids(mine)
    assert other.chunk_ids("doc-1") == ids(theirs)
    assert graph.counts() == counts(1, 3, 2, 3)
    assert other.counts() == counts(2, 3, 1, 3)
    assert graph.chunk_ids("doc-2") == []
    # Every node and relationship carries its namespace; no link crosses one.
    stamps = _query(graph, "MATCH (n) RETURN DISTINCT n.ns AS ns UNION MATCH ()-[r]->() RETURN DISTINCT r.ns AS ns")
    assert sorted(row["ns"] for row in stamps) == sorted({graph.namespace, "other-deployment"})
    assert _query(graph, "MATCH (a)-[r]->(b) WHERE a.ns <> b.ns OR r.ns <> a.ns RETURN count(r) AS n") == [{"n": 0}]
    # A re-upsert and a delete in one namespace leave the other's same-ID document alone.
    graph.upsert_document(*make_document("doc-1", ["shorter"], version=2), RUN_2)
    assert other.chunk_ids("doc-1") == ids(theirs)
    assert other.delete_document("doc-1") == 2
    assert graph.chunk_ids("doc-1") == ids(make_document("doc-1", ["shorter"])[1])
    other.drop_namespace()
    assert other.counts() == counts(0, 0, 0, 0)
    assert graph.counts() == counts(1, 1, 0, 1)
    assert _invariant_violations(graph) == []


def test_a_namespace_must_be_named() -> None:
    with GraphDatabase.driver(_uri(), auth=None) as driver, pytest.raises(ValueError, match="namespace"):
        Neo4jLexicalGraph(driver, namespace="")


# --- transactions, consistency --------------------------------------------------------------------------------


def test_a_failing_upsert_leaves_the_previous_graph(graph: Neo4jLexicalGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    _, old = upsert(graph, "doc-1", sections("a", 4))
    before = graph.counts()
    # Fail at the very end, after every write of the statement ran: a division by zero at run time.
    failing = neo4j_module._UPSERT_DOCUMENT + "WITH d RETURN size($chunk_ids) / (size($links) - size($links)) AS boom\n"
    monkeypatch.setattr(neo4j_module, "_UPSERT_DOCUMENT", failing)
    with pytest.raises(ClientError, match="/ by zero"):
        upsert(graph, "doc-1", ["completely", "different"], run_id=RUN_2, version=2)
    assert graph.counts() == before
    assert graph.chunk_ids("doc-1") == ids(old)
    assert {row["run"] for row in _query(graph, "MATCH (n) RETURN DISTINCT n.run_id AS run")} == {RUN_1}


def test_a_chunk_id_of_another_document_moves(graph: Neo4jLexicalGraph) -> None:
    _, a_chunks = upsert(graph, "doc-a", ["one", "two", "three"])
    doc_b, b_chunks = make_document("doc-b", ["x", "y"])
    # doc-b claims doc-a's middle chunk ID (chunk_id_for never does this; the graph must stay well formed).
    stolen = dataclasses.replace(b_chunks[1], chunk_id=a_chunks[1].chunk_id)
    graph.upsert_document(doc_b, [b_chunks[0], stolen], RUN_2)
    assert graph.chunk_ids("doc-b") == [b_chunks[0].chunk_id, stolen.chunk_id]
    # doc-a lost the chunk and with it the links around it; its chain is broken until it is re-upserted.
    with pytest.raises(LexicalGraphInconsistentError):
        graph.chunk_ids("doc-a")
    # doc-a: "one" and "three", unlinked; doc-b: "x" -> the moved chunk.
    assert graph.counts() == counts(2, 4, 1, 4)
    assert [v for v in _invariant_violations(graph) if v["kind"] != "next_chunk"] == []
    graph.upsert_document(*make_document("doc-a", ["one", "three"]), RUN_2)
    assert graph.chunk_ids("doc-a") == ids(make_document("doc-a", ["one", "three"])[1])
    assert _invariant_violations(graph) == []


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("MATCH (:Chunk {seq: 1})-[r:NEXT_CHUNK]->() DELETE r", "2 chunks start a chain"),
        ("MATCH (a:Chunk {seq: 0}), (b:Chunk {seq: 2}) CREATE (a)-[:NEXT_CHUNK]->(b)", "several NEXT_CHUNK links"),
        ("MATCH (a:Chunk {seq: 2}), (b:Chunk {seq: 0}) CREATE (a)-[:NEXT_CHUNK]->(b)", "0 chunks start a chain"),
        (
            "MATCH (a:Chunk {seq: 2}) CREATE (a)-[:NEXT_CHUNK]->(:Chunk {chunk_id: 'elsewhere', doc_id: 'x'})",
            "leaves the document",
        ),
    ],
)
def test_a_damaged_chain_is_reported_and_repaired_by_a_reupsert(
    graph: Neo4jLexicalGraph, damage: LiteralString, problem: str
) -> None:
    doc, chunks = upsert(graph, "doc-1", sections("a", 3))
    _query(graph, damage)
    with pytest.raises(LexicalGraphInconsistentError, match=problem):
        graph.chunk_ids("doc-1")
    graph.upsert_document(doc, chunks, RUN_2)
    assert graph.chunk_ids("doc-1") == ids(chunks)


def test_random_operations_match_a_model(graph: Neo4jLexicalGraph) -> None:
    rng = random.Random(20240501)
    model: dict[str, list[str]] = {}
    words = ["intro", "setup", "usage", "faq", "api", "notes", "limits", "end"]
    for step in range(60):
        doc_id = f"doc-{rng.randrange(5)}"
        if rng.random() < 0.2:
            assert graph.delete_document(doc_id) == len(model.pop(doc_id, []))
            continue
        texts = rng.sample(words, rng.randrange(0, len(words) + 1))
        doc, chunks = make_document(doc_id, texts, version=step)
        graph.upsert_document(doc, chunks, f"run-{step}")
        model[doc_id] = ids(chunks)
    for doc_id in (f"doc-{i}" for i in range(5)):
        assert graph.chunk_ids(doc_id) == model.get(doc_id, [])
    n_chunks = sum(len(v) for v in model.values())
    links = sum(max(len(v) - 1, 0) for v in model.values())
    assert graph.counts() == counts(len(model), n_chunks, links, n_chunks)
    assert _invariant_violations(graph) == []


def test_concurrent_upserts_of_one_document_end_in_one_version(graph: Neo4jLexicalGraph) -> None:
    # Managed transactions retry deadlocks; whichever version commits last wins, whole.
    versions = [make_document("doc-1", sections(f"v{v}", 3 + v), version=v) for v in range(6)]
    others = [make_document(f"other-{i}", sections(f"o{i}", 4)) for i in range(6)]

    def writer(doc: StoredDocument, chunks: list[Chunk]) -> Callable[[], None]:
        def write() -> None:
            for _ in range(3):
                graph.upsert_document(doc, chunks, RUN_1)

        return write

    _all_at_once([writer(doc, chunks) for doc, chunks in versions + others])
    assert graph.chunk_ids("doc-1") in [ids(chunks) for _, chunks in versions]
    winner = len(graph.chunk_ids("doc-1"))
    assert graph.counts() == counts(7, winner + 24, winner - 1 + 18, winner + 24)
    assert _invariant_violations(graph) == []


# --- lifecycle ---------------------------------------------------------------------------------------------------


def test_connect_to_an_unreachable_server_fails_fast() -> None:
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable):
        Neo4jLexicalGraph.connect("bolt://127.0.0.1:1")
    assert time.monotonic() - started < 10  # no 30 s of transaction retries


def test_connect_needs_user_and_password_together() -> None:
    with pytest.raises(ValueError, match="both user and password"):
        Neo4jLexicalGraph.connect(_uri(), user="neo4j")
    with pytest.raises(ValueError, match="both user and password"):
        Neo4jLexicalGraph.connect(_uri(), password="secret")


def test_closed_graph_refuses_work() -> None:
    graph = Neo4jLexicalGraph.connect(_uri())
    graph.close()
    graph.close()
    with pytest.raises(RuntimeError, match="closed"):
        graph.counts()


def test_a_driver_passed_in_stays_open(graph: Neo4jLexicalGraph) -> None:
    with GraphDatabase.driver(_uri(), auth=None) as driver:
        with Neo4jLexicalGraph(driver, database="neo4j") as mine:
            upsert(mine, "doc-1", ["one", "two"])
            assert mine.database == "neo4j"
        driver.verify_connectivity()
        with _quiet(driver, "neo4j") as session:
            assert session.run("MATCH (c:Chunk) RETURN count(c) AS n").single(strict=True)["n"] == 2
    assert graph.chunk_ids("doc-1") == ids(make_document("doc-1", ["one", "two"])[1])
