"""The text graph projected into Neo4j (`TextGraphProjection`; kgrag_core.handlers.text_graph_projection).

Shape (every node and relationship carries `ns`; keys are (ns, id); schema/constraints.cypher):

    (:TgPassage {chunk_id, doc_id})-[:TG_MENTIONS {chunk_id, acl, kind, weight}]->(:TgNode {node_key, titled})
    (:TgNode)-[:TG_SYNONYM {chunk_id, doc_id, acl, similarity}]->(:TgNode)

Node keys are PostgreSQL's blind indexes (no phrase is stored, ADR 0008). Every edge keeps its evidence
chunk and that chunk's ACL class, so a reader applies the visibility rule the SQL walk applies: an edge
exists for a caller only if its chunk's class is one the caller may read. Nothing reads this on the query
path (the walk reads PostgreSQL); it is a projection for graph tools, rebuilt per document.
"""

from __future__ import annotations

from typing import Any, LiteralString

from neo4j import Driver, ManagedTransaction, NotificationMinimumSeverity, Session

from kgrag_adapters.neo4j.lexical_graph import DEFAULT_NAMESPACE
from kgrag_core.handlers.text_graph_projection import (
    ProjectedMention,
    ProjectedSynonym,
    TextGraphDocument,
)
from kgrag_core.text_graph.model import MentionKind

# `titled` is only ever set, as in PostgreSQL (text_graph_nodes.titled): two documents naming one node may
# be projected concurrently, and the one that read PostgreSQL before the title appeared must not unset it.
#
# What the document held: its passages go (with their mention edges), then its synonym edges; the nodes
# they touched are returned to sweep once the new edges are in.
_DROP_DOCUMENT: LiteralString = """
CALL () {
  MATCH (p:TgPassage {ns: $ns, doc_id: $doc_id})
  OPTIONAL MATCH (p)-[:TG_MENTIONS]->(n:TgNode)
  WITH p, collect(n.node_key) AS keys
  DETACH DELETE p
  RETURN keys
}
WITH collect(keys) AS passage_keys
CALL () {
  MATCH (a:TgNode)-[s:TG_SYNONYM]->(b:TgNode)
  WHERE s.ns = $ns AND s.doc_id = $doc_id
  WITH s, [a.node_key, b.node_key] AS pair
  DELETE s
  RETURN collect(pair) AS synonym_keys
}
RETURN reduce(out = [], k IN passage_keys + synonym_keys | out + k) AS keys
"""

_PUT_MENTIONS: LiteralString = """
UNWIND $rows AS row
MERGE (p:TgPassage {ns: $ns, chunk_id: row.chunk_id})
SET p.doc_id = $doc_id
MERGE (n:TgNode {ns: $ns, node_key: row.node_key})
SET n.titled = coalesce(n.titled, false) OR row.titled
MERGE (p)-[m:TG_MENTIONS]->(n)
SET m.ns = $ns, m.chunk_id = row.chunk_id, m.acl = row.acl, m.kind = row.kind, m.weight = row.weight
"""

_PUT_SYNONYMS: LiteralString = """
UNWIND $rows AS row
MERGE (a:TgNode {ns: $ns, node_key: row.node_a})
SET a.titled = coalesce(a.titled, false) OR row.titled_a
MERGE (b:TgNode {ns: $ns, node_key: row.node_b})
SET b.titled = coalesce(b.titled, false) OR row.titled_b
MERGE (a)-[s:TG_SYNONYM {ns: $ns, chunk_id: row.chunk_id}]->(b)
SET s.doc_id = $doc_id, s.acl = row.acl, s.similarity = row.similarity
"""

_SWEEP: LiteralString = """
UNWIND $keys AS key
MATCH (n:TgNode {ns: $ns, node_key: key})
WHERE NOT EXISTS { (n)--() }
DELETE n
"""

_MENTIONS_OF: LiteralString = """
MATCH (p:TgPassage {ns: $ns, doc_id: $doc_id})-[m:TG_MENTIONS]->(n:TgNode)
RETURN m.chunk_id AS chunk_id, n.node_key AS node_key, m.acl AS acl, m.kind AS kind, m.weight AS weight,
       n.titled AS titled
"""

_SYNONYMS_OF: LiteralString = """
MATCH (a:TgNode)-[s:TG_SYNONYM]->(b:TgNode)
WHERE s.ns = $ns AND s.doc_id = $doc_id
RETURN a.node_key AS a, b.node_key AS b, s.chunk_id AS chunk_id, s.acl AS acl, s.similarity AS similarity,
       a.titled AS titled_a, b.titled AS titled_b
"""

_DOCUMENTS: LiteralString = """
CALL () {
  MATCH (p:TgPassage {ns: $ns}) RETURN DISTINCT p.doc_id AS doc_id
  UNION
  MATCH ()-[s:TG_SYNONYM]->() WHERE s.ns = $ns RETURN DISTINCT s.doc_id AS doc_id
}
RETURN doc_id ORDER BY doc_id
"""

_NODE_KEYS: LiteralString = "MATCH (n:TgNode {ns: $ns}) RETURN n.node_key AS key"

# In rounds of $limit nodes: one transaction for a large namespace would hold it all in the server's heap.
_DROP_NAMESPACE: LiteralString = """
MATCH (n {ns: $ns})
WHERE n:TgNode OR n:TgPassage
WITH n LIMIT $limit
DETACH DELETE n
RETURN count(*) AS deleted
"""


_DROP_ROUND = 5000


class Neo4jTextGraphProjection:
    """On a driver the caller owns (the graph-writer's lexical-graph driver)."""

    def __init__(self, driver: Driver, database: str | None = None, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        if not namespace:
            raise ValueError("namespace must be a non-empty string")
        self._driver = driver
        self._database = database
        self._ns = namespace

    @property
    def namespace(self) -> str:
        return self._ns

    def replace_text_graph(self, doc: TextGraphDocument) -> None:
        """In one transaction: a reader sees the document's old part or its new one, never a mix."""
        mentions = [
            {
                "chunk_id": m.chunk_id,
                "node_key": m.node_key,
                "acl": m.acl_class_id,
                "kind": m.kind.value,
                "weight": float(m.weight),
                "titled": m.node_key in doc.titled,
            }
            for m in doc.mentions
        ]
        synonyms = [
            {
                "node_a": s.node_a,
                "node_b": s.node_b,
                "chunk_id": s.chunk_id,
                "acl": s.acl_class_id,
                "similarity": float(s.similarity),
                "titled_a": s.node_a in doc.titled,
                "titled_b": s.node_b in doc.titled,
            }
            for s in doc.synonyms
        ]

        def work(tx: ManagedTransaction) -> None:
            record = tx.run(_DROP_DOCUMENT, ns=self._ns, doc_id=doc.doc_id).single()
            touched = sorted(set(record["keys"])) if record is not None else []
            params: dict[str, Any] = {"ns": self._ns, "doc_id": doc.doc_id}
            if mentions:
                tx.run(_PUT_MENTIONS, params, rows=mentions).consume()
            if synonyms:
                tx.run(_PUT_SYNONYMS, params, rows=synonyms).consume()
            if touched:
                tx.run(_SWEEP, ns=self._ns, keys=touched).consume()

        with self._session() as session:
            session.execute_write(work)

    def text_graph_of(self, doc_id: str) -> TextGraphDocument:
        """What the projection holds for the document, in the source's shape (for parity checks)."""

        def work(tx: ManagedTransaction) -> TextGraphDocument:
            mentions: list[ProjectedMention] = []
            synonyms: list[ProjectedSynonym] = []
            titled: set[str] = set()
            for r in tx.run(_MENTIONS_OF, ns=self._ns, doc_id=doc_id):
                kind = MentionKind(r["kind"])
                mentions.append(ProjectedMention(r["chunk_id"], r["node_key"], r["acl"], kind, float(r["weight"])))
                if r["titled"]:
                    titled.add(str(r["node_key"]))
            for r in tx.run(_SYNONYMS_OF, ns=self._ns, doc_id=doc_id):
                synonyms.append(ProjectedSynonym(r["a"], r["b"], r["chunk_id"], r["acl"], float(r["similarity"])))
                titled.update(k for k, t in ((r["a"], r["titled_a"]), (r["b"], r["titled_b"])) if t)
            return TextGraphDocument(
                doc_id,
                tuple(sorted(mentions, key=lambda m: (m.chunk_id, m.node_key))),
                tuple(sorted(synonyms, key=lambda s: (s.chunk_id, s.node_a, s.node_b))),
                frozenset(titled),
            )

        with self._session() as session:
            return session.execute_read(work)

    def text_graph_documents(self) -> list[str]:
        with self._session() as session:
            return session.execute_read(lambda tx: [str(r["doc_id"]) for r in tx.run(_DOCUMENTS, ns=self._ns)])

    def node_keys(self) -> set[str]:
        """Every node the projection holds (what a deletion must not leave behind)."""
        with self._session() as session:
            return session.execute_read(lambda tx: {str(r["key"]) for r in tx.run(_NODE_KEYS, ns=self._ns)})

    def drop_namespace(self) -> None:
        """Delete everything this projection holds in its namespace (other projections' nodes stay)."""

        def work(tx: ManagedTransaction) -> int:
            record = tx.run(_DROP_NAMESPACE, ns=self._ns, limit=_DROP_ROUND).single()
            return 0 if record is None else int(record["deleted"])

        while True:
            with self._session() as session:
                if not session.execute_write(work):
                    return

    def _session(self) -> Session:
        return self._driver.session(database=self._database, notifications_min_severity=NotificationMinimumSeverity.OFF)
