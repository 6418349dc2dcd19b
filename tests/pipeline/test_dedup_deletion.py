"""Deleting the document that holds a representative chunk keeps the facts of its live duplicates.

Tier 0 extracts one copy of a repeated text (the representative) and lets its copies reuse that result.
A copy must never depend on the representative's lifetime: deleting the representative's document leaves
every fact the copies' own text supports, visible to whoever may read the copies, and re-anchors the
copies to a surviving one. The chat model in the second test is the labelled fake from kgrag_testing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import psycopg

from kgrag_adapters.postgres.extraction_store import PostgresExtractionStore
from kgrag_core.acl import AclClass, Caller
from kgrag_core.documents import SourceDocument
from kgrag_core.extraction.model import SkipReason
from kgrag_core.extraction.records import ChunkExtractionState, RerunScope
from kgrag_core.extraction.tier3 import rendered_chunks
from kgrag_core.ports import ChatMessage
from kgrag_runtime.app import KgragApp
from kgrag_testing.scripted_llm import ScriptedChatModel, claim, entity, extraction_reply

ADMIN = Caller(user=None, groups=(), admin=True)
READER = Caller(user="ops-reader", groups=("ops",))
OUTSIDER = Caller(user="stranger", groups=("finance",))

PARAGRAPH = (
    "Priya Raman opened the routing review in Leipzig on Tuesday morning. Lena Fischer from Northwind "
    "Logistics presented the new dock schedule for the night shift, and Kenji Sato agreed to test it with "
    "the Hamburg team before the end of March, together with the carriers that deliver to the site."
)
NEAR_COPY = PARAGRAPH + " Minutes taken by the secretary."
NAMES = ("Priya Raman", "Lena Fischer", "Kenji Sato")


def note(doc_id: str, body: str) -> SourceDocument:
    # Meeting notes are a tier-3 priority source: with no model configured the representative is owed its
    # tier-3 pass, so its result is never cached and a later copy finds nothing to reuse but its own text.
    return SourceDocument(
        doc_id=doc_id,
        source="meetings",
        uri=f"meetings://{doc_id}",
        title=doc_id,
        body=body.encode(),
        acl=AclClass.of(["group:ops"]),
        modified_at=datetime(2024, 3, 12, tzinfo=UTC),
        media_type="text/plain",
    )


def _states(kg: KgragApp, doc_ids: Sequence[str]) -> dict[str, ChunkExtractionState]:
    """doc_id -> the extraction state of its one chunk."""
    store = kg.require_extraction().store
    chunks = store.chunks_in_scope(RerunScope(doc_ids=tuple(doc_ids)))
    assert sorted(c.doc_id for c in chunks) == sorted(doc_ids)  # one chunk each
    states = store.states([c.chunk_id for c in chunks])
    return {c.doc_id: states[c.chunk_id] for c in chunks}


def _visible(kg: KgragApp, caller: Caller, names: Sequence[str]) -> set[str]:
    graph = kg.require_graph()
    return {n for n in names if graph.resolve(n, caller)["candidates"]}


def _mentioned(kg: KgragApp, chunk_id: str) -> set[str]:
    """The surface forms of a chunk's mentions, opened under its document's key (migration 0010 seals them)."""
    store = kg.require_extraction().store
    assert isinstance(store, PostgresExtractionStore)
    with store._lease:  # the store's pooled connection, leased to this thread for the query
        rows = store._conn.execute(
            "SELECT m.name, c.doc_id FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id WHERE m.chunk_id = %s",
            (chunk_id,),
        ).fetchall()
    return {store._text(doc_id, bytes(name)) for name, doc_id in rows}


def _references(pg_dsn: str, chunk_id: str) -> dict[str, int]:
    """Rows anywhere in the dedup index and the facts that still name a chunk."""
    queries = {
        "chunk_extractions": "SELECT count(*) FROM chunk_extractions WHERE chunk_id = %s",
        "representative": "SELECT count(*) FROM chunk_extractions WHERE representative_chunk_id = %s",
        "chunk_minhash": "SELECT count(*) FROM chunk_minhash WHERE chunk_id = %s",
        "chunk_lsh_bands": "SELECT count(*) FROM chunk_lsh_bands WHERE chunk_id = %s",
        "kg_mentions": "SELECT count(*) FROM kg_mentions WHERE chunk_id = %s",
        "kg_claim_evidence": "SELECT count(*) FROM kg_claim_evidence WHERE chunk_id = %s",
    }
    with psycopg.connect(pg_dsn) as conn:
        out = {}
        for name, sql in queries.items():
            row = conn.execute(sql, (chunk_id,)).fetchone()  # type: ignore[call-overload]
            out[name] = int(row[0]) if row else -1
    return out


def test_deleting_the_representative_keeps_the_copies_facts_without_a_model(kg: KgragApp, pg_dsn: str) -> None:
    docs = ["notes-a", "notes-b", "notes-c"]
    for doc_id, body in zip(docs, [PARAGRAPH, PARAGRAPH, NEAR_COPY], strict=True):
        kg.ingest([note(doc_id, body)])  # one at a time: each copy is deduplicated against the stored ones
    before = _states(kg, docs)
    rep = before["notes-a"].chunk_id
    assert before["notes-a"].pending_llm and before["notes-a"].representative_chunk_id is None
    assert before["notes-b"].skip_reason == SkipReason.EXACT_DUPLICATE.value
    assert before["notes-c"].skip_reason == SkipReason.NEAR_DUPLICATE.value
    assert {before[d].representative_chunk_id for d in ("notes-b", "notes-c")} == {rep}
    # Every copy carries its own evidence, although the representative's result was never cached.
    for doc_id in docs:
        assert set(NAMES) <= _mentioned(kg, before[doc_id].chunk_id), doc_id
    assert _visible(kg, READER, NAMES) == set(NAMES)  # positive control for the checks below
    assert _visible(kg, OUTSIDER, NAMES) == set()

    assert kg.delete("notes-a").status.value == "DELETED"

    # The copies' facts stayed, with their own evidence, and the allowed reader still sees them.
    assert _visible(kg, READER, NAMES) == set(NAMES)
    assert _visible(kg, OUTSIDER, NAMES) == set()
    after = _states(kg, ["notes-b", "notes-c"])
    for doc_id in ("notes-b", "notes-c"):
        assert set(NAMES) <= _mentioned(kg, after[doc_id].chunk_id), doc_id
    # Nothing points at the deleted chunk any more: not the dedup index, not a copy, not a fact.
    assert _references(pg_dsn, rep) == dict.fromkeys(_references(pg_dsn, rep), 0)
    # Re-anchored: the oldest surviving copy is the representative now, the other copy is its duplicate.
    assert after["notes-b"].representative_chunk_id is None and after["notes-b"].skip_reason is None
    assert after["notes-c"].representative_chunk_id == after["notes-b"].chunk_id
    assert after["notes-c"].skip_reason == SkipReason.NEAR_DUPLICATE.value

    # A new copy deduplicates against the survivor, not against the deleted chunk.
    kg.ingest([note("notes-d", PARAGRAPH)])
    assert _states(kg, ["notes-d"])["notes-d"].representative_chunk_id == after["notes-b"].chunk_id

    # Positive control of the deletion itself: with every copy gone, so are the facts.
    for doc_id in ("notes-b", "notes-c", "notes-d"):
        kg.delete(doc_id)
    assert _visible(kg, ADMIN, NAMES) == set()


LEJ9_QUOTE = "LEJ-9 has 24,500 pallet positions"
CLAIM_PARAGRAPH = (
    "Routing weekly, site review. The new Leipzig warehouse LEJ-9 has 24,500 pallet positions since the "
    "expansion, and the night shift now loads the Hamburg trucks from the east docks before midnight."
)


def _site_claims(messages: Sequence[ChatMessage]) -> str:
    """FAKE model reply: the LEJ-9 capacity claim for every chunk of the request that states it."""
    entities, claims = [], []
    for chunk_id, text in rendered_chunks(messages[-1].content):
        if LEJ9_QUOTE in text:
            entities.append(entity(chunk_id, "LEJ-9", "Site", LEJ9_QUOTE))
            claims.append(claim(chunk_id, ("LEJ-9", "Site"), "capacity_pallets", "24500", LEJ9_QUOTE))
    return extraction_reply(entities=entities, claims=claims)


def test_claims_of_the_copies_survive_the_representative_with_a_fake_model(open_kg, pg_dsn: str) -> None:  # type: ignore[no-untyped-def]
    model = ScriptedChatModel(_site_claims)
    docs = ["site-a", "site-b", "site-c"]
    bodies = [CLAIM_PARAGRAPH, CLAIM_PARAGRAPH + " Noted.", CLAIM_PARAGRAPH + " Noted by the chair."]
    with open_kg(llm=model) as kg:
        for doc_id, body in zip(docs, bodies, strict=True):
            kg.ingest([note(doc_id, body)])
        admin = kg.require_extraction()
        assert len(model.calls) == 1  # only the representative went to the model; the copies reused its result
        before = _states(kg, docs)
        rep = before["site-a"].chunk_id
        assert {before[d].representative_chunk_id for d in ("site-b", "site-c")} == {rep}
        by_doc = {c["doc_id"] for c in admin.claims(READER, entity="LEJ-9", attribute="capacity_pallets")}
        assert by_doc == set(docs)
        assert admin.claims(OUTSIDER, entity="LEJ-9") == []

        kg.delete("site-a")

        claims = admin.claims(READER, entity="LEJ-9", attribute="capacity_pallets")
        assert {c["doc_id"] for c in claims} == {"site-b", "site-c"}
        assert {(c["value"], c["status"]) for c in claims} == {("24500", "current")}
        assert {c["doc_id"] for c in claims if c["quote"] == LEJ9_QUOTE} == {"site-b", "site-c"}  # the model's
        assert admin.claims(OUTSIDER, entity="LEJ-9") == []
        assert _references(pg_dsn, rep) == dict.fromkeys(_references(pg_dsn, rep), 0)
        # The oldest surviving copy became the representative and was read in full (one model call for the
        # group, not one per copy); the other copy reuses it.
        assert len(model.calls) == 2
        after = _states(kg, ["site-b", "site-c"])
        assert after["site-b"].representative_chunk_id is None and after["site-b"].skip_reason is None
        assert after["site-c"].representative_chunk_id == after["site-b"].chunk_id

        kg.delete("site-b")
        kg.delete("site-c")
        assert admin.claims(ADMIN, entity="LEJ-9") == []
