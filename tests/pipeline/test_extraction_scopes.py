"""What extraction learns stays in the access scope it learned it in (docs/security.md, section 4).

A restricted record names a site ("Brackenfold"); tier 2's entity ruler learns the name and its type from
it. Public text ingested later that names the same place is extracted with what public chunks taught the
ruler only, so an outsider sees spaCy's own guess (a Person) and never the restricted type; restricted text of
the record's class, the positive control, is typed by the ruler. Embedded runtime, real PostgreSQL and spaCy.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from kgrag_adapters.postgres.extraction_store import PostgresExtractionStore
from kgrag_core.acl import AclClass, Caller
from kgrag_core.documents import SourceDocument
from kgrag_core.extraction.model import Tier
from kgrag_core.extraction.records import RerunScope
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, render_record
from kgrag_core.extraction.tier2 import SOURCE_CONFIDENCE
from kgrag_runtime.app import KgragApp

LEADERSHIP_ACL = AclClass.of(["group:leadership"])
PUBLIC_ACL = AclClass.of(["public"])
OUTSIDER = Caller(user="sam.ortiz", groups=("engineering",))
LEADER = Caller(user="grace.oneill", groups=("leadership",))
SENTENCE = "The night shift at Brackenfold handled the overflow from the pilot."
AT = datetime(2024, 10, 1, tzinfo=UTC)


def _doc(doc_id: str, body: str, acl: AclClass, *, media_type: str = "text/markdown") -> SourceDocument:
    return SourceDocument(doc_id, "wiki", f"test://{doc_id}", doc_id, body.encode(), acl, AT, media_type=media_type)


SECRET_SITE = _doc(
    "record-site-brackenfold",
    render_record("site", {"code": "Brackenfold", "city": "Leeds", "site_type": "Overflow warehouse"}),
    LEADERSHIP_ACL,
    media_type=RECORD_MEDIA_TYPE,
)


def _mentions(dsn: str, doc_id: str, name: str) -> list[tuple[str, int, float]]:
    """(entity type, tier, confidence) of each mention of `name` in the document's chunks."""
    with PostgresExtractionStore.connect(dsn) as store:
        blind, _ = store.name_index(name)  # names are sealed, found by their blind index (migration 0010)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT e.type, m.tier, m.confidence FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id"
            " JOIN kg_entities e ON e.entity_id = m.entity_id WHERE c.doc_id = %s AND m.name_key = %s ORDER BY 1",
            (doc_id, blind),
        ).fetchall()
    return [(str(t), int(tier), float(conf)) for t, tier, conf in rows]


def _types(kg: KgragApp, name: str, caller: Caller) -> set[Any]:
    return {c["type"] for c in kg.require_graph().resolve(name, caller)["candidates"]}


def test_a_name_a_restricted_record_taught_the_ruler_does_not_type_public_text(kg: KgragApp, pg_dsn: str) -> None:
    kg.ingest([SECRET_SITE])
    kg.ingest([_doc("wiki-night-shift", SENTENCE, PUBLIC_ACL)])
    kg.ingest([_doc("memo-night-shift", SENTENCE, LEADERSHIP_ACL)])  # the same words, the record's class

    ruler = SOURCE_CONFIDENCE["ruler"]
    public = _mentions(pg_dsn, "wiki-night-shift", "Brackenfold")
    assert public, "the public text's name was not extracted at all: the probe would prove nothing"
    assert all(t != "Site" and conf != ruler for t, _, conf in public), public
    restricted = _mentions(pg_dsn, "memo-night-shift", "Brackenfold")
    assert ("Site", int(Tier.NER), ruler) in restricted  # positive control: same text, same class as the record

    assert "Site" not in _types(kg, "Brackenfold", OUTSIDER)
    assert _types(kg, "Brackenfold", OUTSIDER)  # the outsider does see the public mention, as spaCy typed it
    assert "Site" in _types(kg, "Brackenfold", LEADER)


def test_public_knowledge_does_not_type_restricted_text_either(kg: KgragApp, pg_dsn: str) -> None:
    """Scopes are separate both ways: a public record's name is not in a restricted class's ruler, so the
    restricted text is typed the same whatever the public corpus holds (nothing public shapes it)."""
    public_site = _doc(
        "record-site-brackenfold-public",
        render_record("site", {"code": "Brackenfold", "city": "Leeds"}),
        PUBLIC_ACL,
        media_type=RECORD_MEDIA_TYPE,
    )
    kg.ingest([public_site])
    kg.ingest([_doc("memo-night-shift", SENTENCE, LEADERSHIP_ACL)])
    kg.ingest([_doc("wiki-night-shift", SENTENCE, PUBLIC_ACL)])
    ruler = SOURCE_CONFIDENCE["ruler"]
    assert all(conf != ruler for _, _, conf in _mentions(pg_dsn, "memo-night-shift", "Brackenfold"))
    assert ("Site", int(Tier.NER), ruler) in _mentions(pg_dsn, "wiki-night-shift", "Brackenfold")  # control


def test_the_same_text_in_two_classes_is_never_served_from_the_other_class_s_cache(kg: KgragApp) -> None:
    kg.ingest([SECRET_SITE])
    kg.ingest([_doc("memo-night-shift", SENTENCE, LEADERSHIP_ACL)])
    kg.ingest([_doc("wiki-night-shift", SENTENCE, PUBLIC_ACL)])
    admin = kg.require_extraction()
    extractor = admin.extractor
    scope = RerunScope(doc_ids=("memo-night-shift", "wiki-night-shift"))
    chunks = {c.doc_id: c for c in admin.store.chunks_in_scope(scope)}
    secret, public = chunks["memo-night-shift"], chunks["wiki-night-shift"]
    assert secret.content_hash == public.content_hash  # the same text: only the scope tells the entries apart
    assert extractor.key_for(secret) != extractor.key_for(public)
    cached = admin.store.cached([extractor.key_for(secret), extractor.key_for(public)])
    assert {e.type for e in cached[extractor.key_for(secret)].entities if e.name == "Brackenfold"} == {"Site"}
    assert "Site" not in {e.type for e in cached[extractor.key_for(public)].entities if e.name == "Brackenfold"}
