"""Splitting an entity's mentions in some documents off into a sense of their own (0011_namesakes.sql).

The facts those documents support move to the sense's keyed id in one transaction: mentions, and the
relations and claims whose evidence is in those documents (a fact stated in other documents too keeps that
evidence under the old id; relation and claim ids are recomputed, since they hash their entity ids). The
split log and `er_senses` make extraction key the documents' mentions into the sense on every later save.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import LiteralString

import psycopg
from psycopg.types.json import Jsonb

from kgrag_adapters.postgres.merge_clusters import lock_merge_log, recluster
from kgrag_adapters.postgres.store import Row
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.identity import claim_id, relation_id, sense_entity_id, split_id, strong_id_keys
from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.graph.model import SenseSplit
from kgrag_core.shredding import ContentCipher, open_text

# The documents whose chunks carry evidence of an entity: a mention, or a relation or claim about it.
_DOCS_OF: LiteralString = """
SELECT DISTINCT c.doc_id FROM chunks c WHERE c.chunk_id IN (
  SELECT m.chunk_id FROM kg_mentions m WHERE m.entity_id = %(e)s
  UNION SELECT ev.chunk_id FROM kg_relation_evidence ev JOIN kg_relations r ON r.relation_id = ev.relation_id
        WHERE r.subject_id = %(e)s OR r.object_id = %(e)s
  UNION SELECT cv.chunk_id FROM kg_claim_evidence cv JOIN kg_claims cl ON cl.claim_id = cv.claim_id
        WHERE cl.entity_id = %(e)s)
ORDER BY 1
"""


def split_off(
    conn: psycopg.Connection[Row],
    key: bytes,
    cipher: ContentCipher,
    from_id: str,
    doc_ids: Sequence[str],
    *,
    decided_by: str,
    reason: str = "",
    basis_json: object = None,
) -> SenseSplit:
    """Move `from_id`'s facts in `doc_ids` to a new sense and log it (call inside a transaction)."""
    docs = sorted(set(doc_ids))
    lock_merge_log(conn)
    row = conn.execute("SELECT type FROM kg_entities WHERE entity_id = %s", (from_id,)).fetchone()
    if row is None:
        raise KgragError(
            ErrorCode.ENTITY_NOT_FOUND, f"No entity {from_id!r}.", hint="Find ids with `kgrag entities resolve NAME`."
        )
    named = [r[0] for r in conn.execute(_DOCS_OF, {"e": from_id})]
    missing = [d for d in docs if d not in named]
    if not docs or missing:
        raise KgragError(
            ErrorCode.INVALID_QUERY,
            f"{from_id} is not named in document {missing[0]!r}." if missing else "A split needs documents.",
            hint=f"Name documents that mention it: {', '.join(named[:10])}.",
        )
    if set(named) <= set(docs):
        raise KgragError(
            ErrorCode.INVALID_QUERY,
            f"Every document naming {from_id} is in the split: nothing would be left apart from it.",
            hint="Leave at least one document with the entity.",
        )
    group_row = conn.execute("SELECT group_id FROM er_split_log WHERE entity_id = %s LIMIT 1", (from_id,)).fetchone()
    group = str(group_row[0]) if group_row is not None else from_id
    sid = split_id(from_id, docs)
    sense = sense_entity_id(group, sid, key=key)
    chunks = [r[0] for r in conn.execute("SELECT chunk_id FROM chunks WHERE doc_id = ANY(%s)", (docs,))]
    # The sense's row, like every entity row, keeps blind indexes only (0010_sealed_names): the group's name
    # indexes, and its identifiers as these documents' mentions carry them, opened under each document's
    # key and blinded again.
    sealed_ids = conn.execute(
        "SELECT m.strong_ids, c.doc_id FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id"
        " WHERE m.entity_id = %s AND m.chunk_id = ANY(%s::text[]) AND m.strong_ids IS NOT NULL",
        (from_id, chunks),
    ).fetchall()
    pairs: set[tuple[str, str]] = set()
    for sealed, doc in sealed_ids:
        pairs.update((str(k), str(v)) for k, v in json.loads(open_text(cipher, doc, bytes(sealed)) or "[]"))
    conn.execute(
        "INSERT INTO kg_entities (entity_id, type, name_key, name_tokens, strong_ids)"
        " SELECT %(s)s, e.type, e.name_key, e.name_tokens, %(ids)s"
        " FROM kg_entities e WHERE e.entity_id = %(e)s ON CONFLICT (entity_id) DO NOTHING",
        {"s": sense, "e": from_id, "ids": Jsonb(strong_id_keys(key, sorted(pairs)))},
    )
    _move_relations(conn, from_id, sense, chunks)
    _move_claims(conn, cipher, from_id, sense, chunks)
    conn.execute(
        "INSERT INTO kg_mentions (chunk_id, entity_id, name, name_key, name_tokens, tier, quote, confidence,"
        " strong_ids) SELECT chunk_id, %(s)s, name, name_key, name_tokens, tier, quote, confidence, strong_ids"
        " FROM kg_mentions"
        " WHERE entity_id = %(e)s AND chunk_id = ANY(%(c)s::text[]) ON CONFLICT DO NOTHING",
        {"s": sense, "e": from_id, "c": chunks},
    )
    conn.execute(
        "DELETE FROM kg_mentions WHERE entity_id = %s AND chunk_id = ANY(%s::text[])", (from_id, chunks)
    )  # the 0003 clean-up drops from_id's row if nothing refers to it any more
    conn.execute(
        "INSERT INTO er_split_log (split_id, from_id, group_id, entity_id, doc_ids, basis, reason, decided_by)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (split_id) DO NOTHING",
        (sid, from_id, group, sense, docs, Jsonb(basis_json if basis_json is not None else []), reason, decided_by),
    )
    conn.execute(
        "INSERT INTO er_senses (group_id, doc_id, entity_id, split_id) SELECT %s, d, %s, %s FROM unnest(%s::text[]) d"
        " ON CONFLICT (group_id, doc_id) DO UPDATE SET entity_id = EXCLUDED.entity_id, split_id = EXCLUDED.split_id",
        (group, sense, sid, docs),
    )
    recluster(conn, [from_id, sense])
    return SenseSplit(sid, from_id, sense, tuple(docs), decided_by, reason)


def _move_relations(conn: psycopg.Connection[Row], old: str, new: str, chunks: list[str]) -> None:
    rows = conn.execute(
        "SELECT DISTINCT r.relation_id, r.subject_id, r.relation, r.object_id, r.polarity, r.modality, r.valid_from,"
        " r.valid_to FROM kg_relations r JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id"
        " WHERE (r.subject_id = %s OR r.object_id = %s) AND ev.chunk_id = ANY(%s::text[])",
        (old, old, chunks),
    ).fetchall()
    for rid, subject, relation, obj, polarity, modality, valid_from, valid_to in rows:
        s, o = (new if subject == old else subject), (new if obj == old else obj)
        moved = relation_id(s, relation, o, _day(valid_from), Polarity(polarity), Modality(modality))
        conn.execute(
            "INSERT INTO kg_relations (relation_id, subject_id, relation, object_id, polarity, modality, valid_from,"
            " valid_to) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (relation_id) DO NOTHING",
            (moved, s, relation, o, polarity, modality, valid_from, valid_to),
        )
        conn.execute(
            "INSERT INTO kg_relation_evidence (relation_id, chunk_id, quote, tier, confidence, subject_name,"
            " object_name) SELECT %s, chunk_id, quote, tier, confidence, subject_name, object_name"
            " FROM kg_relation_evidence"
            " WHERE relation_id = %s AND chunk_id = ANY(%s::text[]) ON CONFLICT DO NOTHING",
            (moved, rid, chunks),
        )
        conn.execute(
            "DELETE FROM kg_relation_evidence WHERE relation_id = %s AND chunk_id = ANY(%s::text[])", (rid, chunks)
        )


def _move_claims(conn: psycopg.Connection[Row], cipher: ContentCipher, old: str, new: str, chunks: list[str]) -> None:
    # A claim's value is sealed on its evidence rows (0010_sealed_names); the new claim id keys it, so it is
    # opened from one of the moving rows (each under its document's key).
    rows = conn.execute(
        "SELECT cl.claim_id, cl.attribute, cl.polarity, cl.modality, cl.valid_from, cl.valid_to,"
        " array_agg(cv.value ORDER BY cv.chunk_id, cv.quote_key),"
        " array_agg(c.doc_id ORDER BY cv.chunk_id, cv.quote_key)"
        " FROM kg_claims cl JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id"
        " JOIN chunks c ON c.chunk_id = cv.chunk_id"
        " WHERE cl.entity_id = %s AND cv.chunk_id = ANY(%s::text[]) GROUP BY cl.claim_id ORDER BY cl.claim_id",
        (old, chunks),
    ).fetchall()
    for cid, attribute, polarity, modality, valid_from, valid_to, values, value_docs in rows:
        opened = (open_text(cipher, doc, bytes(v)) for v, doc in zip(values, value_docs, strict=True))
        value = next((v for v in opened if v is not None), None)
        if value is None:
            raise KgragError(
                ErrorCode.INTERNAL, f"Claim {cid} of {old} has no evidence value that opens in the split's documents."
            )
        moved = claim_id(new, attribute, value, _day(valid_from), Polarity(polarity), Modality(modality))
        conn.execute(
            "INSERT INTO kg_claims (claim_id, entity_id, attribute, polarity, modality, valid_from, valid_to)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (claim_id) DO NOTHING",
            (moved, new, attribute, polarity, modality, valid_from, valid_to),
        )
        conn.execute(
            "INSERT INTO kg_claim_evidence (claim_id, chunk_id, quote, tier, confidence, entity_name, value)"
            " SELECT %s, chunk_id, quote, tier, confidence, entity_name, value FROM kg_claim_evidence"
            " WHERE claim_id = %s AND chunk_id = ANY(%s::text[]) ON CONFLICT DO NOTHING",
            (moved, cid, chunks),
        )
        conn.execute("DELETE FROM kg_claim_evidence WHERE claim_id = %s AND chunk_id = ANY(%s::text[])", (cid, chunks))


def _day(value: object) -> date | None:
    return value if isinstance(value, date) else None


def kept_apart(conn: psycopg.Connection[Row]) -> list[tuple[str, str]]:
    """Every split's (from, sense) pair: resolution must not merge a split back on its own."""
    rows = conn.execute("SELECT from_id, entity_id FROM er_split_log ORDER BY seq").fetchall()
    return sorted({(a, b) if a <= b else (b, a) for a, b in rows})
