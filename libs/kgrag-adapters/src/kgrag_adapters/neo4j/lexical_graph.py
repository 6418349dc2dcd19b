"""`LexicalGraph` on Neo4j 5 through the official driver: (Document)<-[:FROM_DOCUMENT]-(Chunk)-[:NEXT_CHUNK]->(Chunk).

The graph is a navigator, not a store: a Chunk node carries the chunk's identity, position, hash and ACL
class, never its text (PostgreSQL holds that and is the truth the graph is rebuilt from). Every node and
relationship a write touches carries the `run_id` of the projection run that wrote it.

Namespaces: every node and relationship also carries `ns`, every query matches on it, and the keys are
(ns, id), so several deployments (or a test and a deployment) share one database — Community Edition has
only one — without seeing each other's nodes (`KGRAG_NEO4J_NAMESPACE`; the knowledge graph uses the same).

Writes:
- `upsert_document` is ONE statement in ONE managed write transaction (`execute_write`, so transient
  errors such as deadlocks are retried as a whole): merge the Document, DETACH DELETE the document's
  chunks that are not in the new set, drop the document's NEXT_CHUNK links, merge the chunks and their
  FROM_DOCUMENT, and create the chain again between chunks consecutive in seq order. Repeating a call
  leaves the same graph. Needs Neo4j 5.23+ (scoped CALL subqueries); tested on 5.26 LTS.
- `delete_document` DETACH DELETEs the chunks and the Document in one transaction.

The schema (constraints and indexes) lives in `schemas/neo4j/constraints.cypher`, reached through the
`schema` symlink next to this module (like the PostgreSQL migrations); `connect()` applies it, and so does
`ensure_schema()` for a graph built on a driver of the caller's.

Every session the adapter opens asks the server for no notifications: on a fresh database the server warns
about each label, relationship type and property key it has not seen yet, and the driver turns server
notifications into Python warnings in development mode. The adapter's Cypher is checked to raise no
notification (deprecations, cartesian products, ...) by the adapter's tests instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, LiteralString

from neo4j import (
    Driver,
    GraphDatabase,
    ManagedTransaction,
    NotificationMinimumSeverity,
    Session,
    basic_auth,
    unit_of_work,
)
from neo4j.exceptions import ClientError

from kgrag_adapters.lifecycle import Closeable
from kgrag_core.documents import Chunk, StoredDocument

__all__ = [
    "DEFAULT_NAMESPACE",
    "QUERIES",
    "SCHEMA_FILE",
    "LexicalGraphInconsistentError",
    "Neo4jLexicalGraph",
    "load_schema_statements",
]

SCHEMA_FILE = Path(__file__).resolve().parent / "schema" / "constraints.cypher"
# How long connect() waits for the schema's indexes to come online (instant on an empty database).
_INDEX_WAIT_SECONDS = 300
_SCHEMA_ATTEMPTS = 3
_SCHEMA_RACE_CODES = frozenset(
    {
        "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
        "Neo.ClientError.Schema.ConstraintAlreadyExists",
        "Neo.ClientError.Schema.IndexAlreadyExists",
        # the schema's DROP ... IF EXISTS of a pre-namespace rule that a racing connect dropped first
        "Neo.ClientError.Schema.ConstraintDropFailed",
        "Neo.ClientError.Schema.IndexDropFailed",
    }
)
DEFAULT_NAMESPACE = "kg"  # the knowledge graph's default too: one deployment, one namespace

# --- Cypher ---------------------------------------------------------------------------------------------
# Every query is a literal (typed LiteralString by the driver); values always travel as parameters.

# One statement, so one round trip (the caller still runs it in a managed write transaction). Its steps:
# 1. merge the Document; `+=` replaces the listed properties and keeps others (e.g. ones the
#    knowledge-graph work adds);
# 2. DETACH DELETE the document's chunks that are not in the new set;
# 3. drop every NEXT_CHUNK link from or to the document's chunks (undirected: a link between two of them
#    matches twice, and deleting it again in the same statement is a no-op);
# 4. merge the chunks and their FROM_DOCUMENT. run_id stays out of the relationship's MERGE pattern and is
#    SET instead: in the pattern, a new run would add a second FROM_DOCUMENT rather than update the first.
#    A chunk ID held by ANOTHER document (impossible with kgrag_core.ids.chunk_id_for, which hashes the
#    doc_id in, but not the graph's to assume) moves here and leaves its old relationships behind, so a
#    chunk always has exactly one FROM_DOCUMENT;
# 5. create the chain between chunks consecutive in seq order (computed by the caller). Two MATCH clauses,
#    not one with a comma, which the server reports as a cartesian product.
# Scoped CALL subqueries (`CALL (d) { ... }`) need Neo4j 5.23 or later; the older importing-WITH form is
# deprecated in 5.x.
_UPSERT_DOCUMENT: LiteralString = """
MERGE (d:Document {ns: $ns, doc_id: $doc_id})
SET d += $props, d.run_id = $run_id, d.updated_at = datetime.transaction()
WITH d
CALL () {
  MATCH (stale:Chunk {ns: $ns, doc_id: $doc_id})
  WHERE NOT stale.chunk_id IN $chunk_ids
  DETACH DELETE stale
}
CALL () {
  MATCH (:Chunk {ns: $ns, doc_id: $doc_id})-[link:NEXT_CHUNK]-()
  DELETE link
}
CALL (d) {
  UNWIND $chunks AS row
  MERGE (c:Chunk {ns: $ns, chunk_id: row.chunk_id})
  WITH c, row, c.doc_id IS NOT NULL AND c.doc_id <> $doc_id AS moved
  SET c += row, c.run_id = $run_id
  WITH c, moved
  CALL (c, moved) {
    OPTIONAL MATCH (c)-[old:NEXT_CHUNK|FROM_DOCUMENT]-()
    WHERE moved
    DELETE old
  }
  MERGE (c)-[f:FROM_DOCUMENT]->(d)
  SET f.run_id = $run_id, f.ns = $ns
}
CALL () {
  UNWIND $links AS link
  MATCH (a:Chunk {ns: $ns, chunk_id: link.prev})
  MATCH (b:Chunk {ns: $ns, chunk_id: link.next})
  CREATE (a)-[:NEXT_CHUNK {ns: $ns, run_id: $run_id}]->(b)
}
"""

_DELETE_CHUNKS: LiteralString = """
MATCH (c:Chunk {ns: $ns, doc_id: $doc_id})
DETACH DELETE c
RETURN count(*) AS removed
"""

_DELETE_DOCUMENT: LiteralString = """
MATCH (d:Document {ns: $ns, doc_id: $doc_id})
DETACH DELETE d
"""

# Membership is the FROM_DOCUMENT relationship; the chain is walked in Python (see _walk_chain), which
# also checks it.
_CHAIN_OF_DOCUMENT: LiteralString = """
MATCH (c:Chunk)-[:FROM_DOCUMENT]->(:Document {ns: $ns, doc_id: $doc_id})
OPTIONAL MATCH (c)-[:NEXT_CHUNK]->(n:Chunk)
RETURN c.chunk_id AS chunk_id, collect(n.chunk_id) AS next
"""

# The namespace's nodes and links (read from its indexes, not the label count store, which counts every
# namespace). COUNT {} subqueries, not chained `WITH x, count(y)`, which would return no row at all on an
# empty graph (x is a grouping key then).
_COUNTS: LiteralString = """
RETURN COUNT { (:Document {ns: $ns}) } AS documents,
       COUNT { (:Chunk {ns: $ns}) } AS chunks,
       COUNT { (:Chunk {ns: $ns})-[:NEXT_CHUNK]->() } AS next_chunk,
       COUNT { (:Chunk {ns: $ns})-[:FROM_DOCUMENT]->() } AS from_document
"""

# Everything of one namespace, in batches (a big graph in one transaction would exhaust the heap).
_DROP_CHUNKS: LiteralString = """
MATCH (n:Chunk {ns: $ns})
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS
"""
_DROP_DOCUMENTS: LiteralString = """
MATCH (n:Document {ns: $ns})
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS
"""

_AWAIT_INDEXES: LiteralString = "CALL db.awaitIndexes($seconds)"

# Every query the adapter sends, by name (its tests check each one raises no server notification).
QUERIES: Mapping[str, LiteralString] = {
    "upsert_document": _UPSERT_DOCUMENT,
    "delete_chunks": _DELETE_CHUNKS,
    "delete_document": _DELETE_DOCUMENT,
    "chain_of_document": _CHAIN_OF_DOCUMENT,
    "counts": _COUNTS,
    "drop_chunks": _DROP_CHUNKS,
    "drop_documents": _DROP_DOCUMENTS,
    "await_indexes": _AWAIT_INDEXES,
}


class LexicalGraphInconsistentError(RuntimeError):
    """A document's NEXT_CHUNK links do not form one chain through all of its chunks.

    The adapter leaves a graph like that only when another document's upsert took over one of this
    document's chunk IDs (which kgrag's chunk IDs, derived from the doc_id, never do); otherwise someone
    else wrote to the graph. Re-projecting the document from PostgreSQL (`upsert_document`) repairs it.
    """


def load_schema_statements(path: Path = SCHEMA_FILE) -> list[str]:
    """The statements of a schema file: `//` comment lines dropped, the rest split at `;`."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("//")]
    statements = [" ".join(part.split()) for part in "\n".join(lines).split(";")]
    found = [s for s in statements if s]
    if not found:
        # An empty list means a broken install (e.g. the symlink was not followed), not "no schema".
        raise FileNotFoundError(f"no schema statements found in {path}")
    return found


class Neo4jLexicalGraph(Closeable):
    """The lexical graph in a Neo4j 5 database (`database=None`: the server's default database), in
    `namespace` (every node and relationship carries it as `ns`; other namespaces' nodes are never read or
    written).

    The driver passed in stays the caller's: `close()` closes only a driver that `connect()` opened.
    Safe to share between threads (the driver is; every call opens its own session).
    """

    def __init__(self, driver: Driver, database: str | None = None, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        if not namespace:
            raise ValueError("namespace must be a non-empty string")
        self._driver: Driver | None = driver
        self._database = database
        self._ns = namespace
        self._owns_driver = False

    @classmethod
    def connect(
        cls,
        uri: str,
        *,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Neo4jLexicalGraph:
        """A graph on the server at `uri` (e.g. bolt://host:7687), with the schema applied.

        Without `user` and `password` the driver sends no credentials (a server with auth disabled).
        Raises `neo4j.exceptions.ServiceUnavailable` at once when the server cannot be reached.
        """
        if (user is None) != (password is None):
            raise ValueError("pass both user and password, or neither (a server with auth disabled)")
        auth = basic_auth(user, password) if user is not None and password is not None else None
        driver = GraphDatabase.driver(uri, auth=auth)
        try:
            # Fails fast; the managed transactions below would retry an unreachable server for 30 s.
            driver.verify_connectivity()
            graph = cls(driver, database, namespace=namespace)
            graph.ensure_schema()
        except BaseException:
            driver.close()
            raise
        graph._owns_driver = True
        return graph

    @property
    def driver(self) -> Driver:
        return self._live()

    @property
    def database(self) -> str | None:
        return self._database

    @property
    def namespace(self) -> str:
        return self._ns

    def ensure_schema(self, path: Path = SCHEMA_FILE) -> None:
        """Apply the schema file's constraints and indexes (idempotent), then wait until they are online."""
        statements = load_schema_statements(path)
        with self._session() as session:
            for statement in statements:
                for attempt in range(1, _SCHEMA_ATTEMPTS + 1):
                    try:
                        # Schema commands may share a transaction only with other schema commands: one
                        # each. The text is the packaged file's (trusted DDL, not a value), not a literal.
                        session.execute_write(_run, statement, {})
                        break
                    except ClientError as exc:
                        # Two connects racing on a fresh database: IF NOT EXISTS is checked before the
                        # other's rule commits, and this one then fails. Again, it is a no-op.
                        if exc.code not in _SCHEMA_RACE_CODES or attempt == _SCHEMA_ATTEMPTS:
                            raise
            session.run(_AWAIT_INDEXES, seconds=_INDEX_WAIT_SECONDS).consume()

    # --- LexicalGraph ---------------------------------------------------------------------------------

    def upsert_document(self, doc: StoredDocument, chunks: Sequence[Chunk], run_id: str) -> None:
        if not run_id:
            raise ValueError("run_id must be a non-empty string")
        ordered = _checked_chunks(doc, chunks)
        doc_props: dict[str, Any] = {
            "title": doc.title,
            "uri": doc.uri,
            "source": doc.source,
            "version": doc.version,
            "content_hash": doc.content_hash,
            "acl_class_id": doc.acl_class_id,
            "status": doc.status.value,
        }
        rows = [
            {
                "chunk_id": c.chunk_id,
                "doc_id": c.doc_id,
                "seq": c.seq,
                "start_byte": c.start_byte,
                "end_byte": c.end_byte,
                "content_hash": c.content_hash,
                "acl_class_id": c.acl_class_id,
                "section_path": c.section_path,
                "token_count": c.token_count,
            }
            for c in ordered
        ]
        links = [{"prev": a.chunk_id, "next": b.chunk_id} for a, b in itertools.pairwise(ordered)]
        parameters = {
            "ns": self._ns,
            "doc_id": doc.doc_id,
            "run_id": run_id,
            "props": doc_props,
            "chunk_ids": [r["chunk_id"] for r in rows],
            "chunks": rows,
            "links": links,
        }
        # The run and document travel as transaction metadata: SHOW TRANSACTIONS and query.log show them.
        work = unit_of_work(metadata={"app": "kgrag", "op": "upsert_document", "doc_id": doc.doc_id, "run_id": run_id})(
            _run
        )
        with self._session() as session:
            session.execute_write(work, _UPSERT_DOCUMENT, parameters)

    def delete_document(self, doc_id: str) -> int:
        def work(tx: ManagedTransaction) -> int:
            record = tx.run(_DELETE_CHUNKS, ns=self._ns, doc_id=doc_id).single(strict=True)
            tx.run(_DELETE_DOCUMENT, ns=self._ns, doc_id=doc_id).consume()
            removed: int = record["removed"]
            return removed

        with self._session() as session:
            return session.execute_write(work)

    def chunk_ids(self, doc_id: str) -> list[str]:
        def work(tx: ManagedTransaction) -> dict[str, list[str]]:
            return {r["chunk_id"]: list(r["next"]) for r in tx.run(_CHAIN_OF_DOCUMENT, ns=self._ns, doc_id=doc_id)}

        with self._session() as session:
            successors = session.execute_read(work)
        return _walk_chain(doc_id, successors)

    def counts(self) -> dict[str, int]:
        def work(tx: ManagedTransaction) -> dict[str, int]:
            record = tx.run(_COUNTS, ns=self._ns).single(strict=True)
            return {key: int(record[key]) for key in ("documents", "chunks", "next_chunk", "from_document")}

        with self._session() as session:
            return session.execute_read(work)

    def drop_namespace(self) -> None:
        """Delete this namespace's documents and chunks (a test's, or a retired deployment's); other
        namespaces are untouched. Batched, so it runs in auto-commit transactions of its own."""
        with self._session() as session:
            session.run(_DROP_CHUNKS, ns=self._ns).consume()
            session.run(_DROP_DOCUMENTS, ns=self._ns).consume()

    # --- lifecycle -------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the driver if `connect()` opened it; idempotent. The graph refuses work afterwards."""
        driver, self._driver = self._driver, None
        if driver is not None and self._owns_driver:
            driver.close()

    def _live(self) -> Driver:
        if self._driver is None:
            raise RuntimeError("Neo4jLexicalGraph is closed")
        return self._driver

    def _session(self) -> Session:
        return self._live().session(
            database=self._database,
            notifications_min_severity=NotificationMinimumSeverity.OFF,
        )


def _run(tx: ManagedTransaction, query: str, parameters: dict[str, Any]) -> None:
    tx.run(query, parameters).consume()


def _checked_chunks(doc: StoredDocument, chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks in seq order, after checking they form one document's chunk set (nothing is written else)."""
    ids: set[str] = set()
    seqs: set[int] = set()
    for chunk in chunks:
        if chunk.doc_id != doc.doc_id:
            raise ValueError(f"chunk {chunk.chunk_id} belongs to {chunk.doc_id!r}, not to {doc.doc_id!r}")
        if chunk.chunk_id in ids:
            raise ValueError(f"chunk {chunk.chunk_id} is given twice")
        if chunk.seq in seqs:
            raise ValueError(f"seq {chunk.seq} is given twice in document {doc.doc_id!r}")
        ids.add(chunk.chunk_id)
        seqs.add(chunk.seq)
    return sorted(chunks, key=lambda c: c.seq)


def _walk_chain(doc_id: str, successors: Mapping[str, list[str]]) -> list[str]:
    """Chunk IDs from the head of the chain along NEXT_CHUNK; raise unless that visits every chunk once."""
    if not successors:
        return []
    targets = {n for nexts in successors.values() for n in nexts}
    heads = sorted(set(successors) - targets)
    problem: str | None = None
    if any(len(nexts) > 1 for nexts in successors.values()):
        problem = "a chunk has several NEXT_CHUNK links"
    elif not targets <= successors.keys():
        problem = "a NEXT_CHUNK link leaves the document"
    elif len(heads) != 1:
        problem = f"{len(heads)} chunks start a chain"
    if problem is None:
        order = [heads[0]]
        while successors[order[-1]] and len(order) <= len(successors):
            order.append(successors[order[-1]][0])
        if len(order) == len(successors) and len(set(order)) == len(order):
            return order
        problem = "the chain does not pass through every chunk once"
    raise LexicalGraphInconsistentError(
        f"document {doc_id!r}: NEXT_CHUNK links are inconsistent ({problem}); re-upsert it from the store"
    )
