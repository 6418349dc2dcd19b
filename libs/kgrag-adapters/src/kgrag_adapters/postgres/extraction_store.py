"""The ExtractionStore on PostgreSQL: extraction cache, per-chunk state, facts with evidence, ontology versions, runs.

A subclass of PostgresStore, so it shares that class's connection handling (pooled autocommit connections,
one leased per thread, reconnect after a broken connection, explicit transactions for multi-statement
writes) and is also a DocumentStore: one object serves an extractor that reads chunks and writes facts.

Facts and their clean-up live in the schema (0003_extraction.sql): evidence rows cascade with their chunk
and triggers remove facts left without evidence, so documents changing or going need nothing from here.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any, LiteralString

import psycopg
from psycopg.types.json import Jsonb

from kgrag_adapters.postgres.merge_clusters import hold_merge_log, recluster
from kgrag_adapters.postgres.store import _CHUNK_COLUMNS, PostgresStore, Row, _utc_or_none
from kgrag_core.documents import Chunk
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.claims import cardinalities, timeline
from kgrag_core.extraction.identity import (
    claim_id,
    entity_id,
    name_key,
    name_token_keys,
    normalise_name,
    relation_id,
    strong_id_keys,
)
from kgrag_core.extraction.model import ChunkExtraction, ExtractionKey, Modality, Polarity, Quarantined, Tier
from kgrag_core.extraction.ontology import Cardinality, parse_ontology
from kgrag_core.extraction.records import (
    ChunkExtractionState,
    ClaimRecord,
    ExtractionRun,
    MinHashEntry,
    RerunScope,
    RunEstimate,
)
from kgrag_core.extraction.serialise import extraction_from_dict, extraction_to_dict
from kgrag_core.shredding import KeyEncryptionKey, Sealer, open_text, seal_text

_LIVE_CHUNKS: LiteralString = " JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'"

_UPSERT_CACHE = """
INSERT INTO extraction_cache (content_hash, extractor_version, ontology_version, tier, result, key_doc_id)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (content_hash, extractor_version, ontology_version) DO UPDATE SET
    tier = EXCLUDED.tier, result = EXCLUDED.result, key_doc_id = EXCLUDED.key_doc_id, created_at = now()
"""

_UPSERT_STATE = """
INSERT INTO chunk_extractions (chunk_id, content_hash, tier, extractor_version, ontology_version, skip_reason,
                               representative_chunk_id, pending_llm, items, dropped)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (chunk_id) DO UPDATE SET
    content_hash = EXCLUDED.content_hash, tier = EXCLUDED.tier, extractor_version = EXCLUDED.extractor_version,
    ontology_version = EXCLUDED.ontology_version, skip_reason = EXCLUDED.skip_reason,
    representative_chunk_id = EXCLUDED.representative_chunk_id, pending_llm = EXCLUDED.pending_llm,
    items = EXCLUDED.items, dropped = EXCLUDED.dropped, extracted_at = now()
"""

# DO UPDATE (not DO NOTHING) so the row is locked until commit: the orphan clean-up of a concurrent chunk
# deletion then waits instead of removing an entity this transaction is about to refer to.
_UPSERT_ENTITY = """
INSERT INTO kg_entities (entity_id, type, name_key, name_tokens, strong_ids) VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (entity_id) DO UPDATE SET strong_ids = (
    SELECT COALESCE(jsonb_agg(DISTINCT x ORDER BY x), '[]'::jsonb)
    FROM jsonb_array_elements(kg_entities.strong_ids || EXCLUDED.strong_ids) AS x
)
"""

# A mention keeps the strong identifiers it carried: readers show an entity's identifiers from the mentions
# they may read, never the entity row's union (docs/security.md, section 3). Name and identifiers are sealed
# under the chunk's document key (migration 0010), so repeats are merged before the insert (_Facts.add); a
# conflict here is a concurrent save of the same chunk, whose identifiers are the same.
_INSERT_MENTION = """
INSERT INTO kg_mentions (chunk_id, entity_id, name, name_key, name_tokens, tier, quote, confidence, strong_ids)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (chunk_id, entity_id, name, quote_key) DO UPDATE SET
    confidence = GREATEST(kg_mentions.confidence, EXCLUDED.confidence), strong_ids = EXCLUDED.strong_ids
"""

_INSERT_RELATION = """
INSERT INTO kg_relations (relation_id, subject_id, relation, object_id, polarity, modality, valid_from, valid_to)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (relation_id) DO UPDATE SET valid_to = COALESCE(kg_relations.valid_to, EXCLUDED.valid_to)
"""

_INSERT_RELATION_EVIDENCE = """
INSERT INTO kg_relation_evidence (relation_id, chunk_id, quote, tier, confidence, subject_name, object_name)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (relation_id, chunk_id, quote_key) DO UPDATE SET
    confidence = GREATEST(kg_relation_evidence.confidence, EXCLUDED.confidence)
"""

_INSERT_CLAIM = """
INSERT INTO kg_claims (claim_id, entity_id, attribute, polarity, modality, valid_from, valid_to)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (claim_id) DO UPDATE SET valid_to = COALESCE(kg_claims.valid_to, EXCLUDED.valid_to)
"""

_INSERT_CLAIM_EVIDENCE = """
INSERT INTO kg_claim_evidence (claim_id, chunk_id, quote, tier, confidence, entity_name, value)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (claim_id, chunk_id, quote_key) DO UPDATE SET
    confidence = GREATEST(kg_claim_evidence.confidence, EXCLUDED.confidence)
"""

# acl_class_id, doc_id and the date written come from the chunk row, not a copy (see 0003_extraction.sql).
# The entity is named as the claim's own evidence chunk names it (its mention there, else the name the claim
# item gave): never by another chunk's name, maybe a restricted one (docs/security.md, section 3). For the
# same reason a name finds an entity through the mentions the caller may read, or through the blind name
# index only of an entity keyed by that name. Name, value and quote are sealed under the chunk's document
# key (ADR 0008); the name is matched by its blind index (migration 0010).
_SELECT_CLAIMS: LiteralString = """
SELECT cl.claim_id, cl.entity_id,
       COALESCE((SELECT m.name FROM kg_mentions m WHERE m.chunk_id = ev.chunk_id AND m.entity_id = cl.entity_id
                 ORDER BY m.confidence DESC, m.name LIMIT 1), ev.entity_name),
       e.type, cl.attribute, ev.value, ev.quote, cl.modality, cl.polarity,
       cl.valid_from, cl.valid_to, (c.doc_time AT TIME ZONE 'UTC')::date, ev.chunk_id, c.doc_id, c.acl_class_id,
       ev.tier, ev.confidence
FROM kg_claims cl
JOIN kg_entities e ON e.entity_id = cl.entity_id
JOIN kg_claim_evidence ev ON ev.claim_id = cl.claim_id
JOIN chunks c ON c.chunk_id = ev.chunk_id
JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'
WHERE (%(entity)s::text IS NULL OR cl.entity_id IN (
          SELECT entity_id FROM kg_entities WHERE name_key = %(entity)s AND strong_ids = '[]'::jsonb
          UNION SELECT m.entity_id FROM kg_mentions m JOIN chunks mc ON mc.chunk_id = m.chunk_id
          JOIN documents md ON md.doc_id = mc.doc_id AND md.status = 'ACTIVE'
          WHERE m.name_key = %(entity)s AND (%(admin)s OR mc.acl_class_id = ANY(%(acl)s::text[]))))
  AND (%(attribute)s::text IS NULL OR cl.attribute = %(attribute)s)
  AND (%(admin)s OR c.acl_class_id = ANY(%(acl)s::text[]))
"""

# A type given in a chunk a record mapping or the model read outranks NER's guesses, however common those are.
# Names are sealed per document (migration 0010), so rows come back per sealed name and document, and are
# opened, summed and ranked in Python (`_rank_names`). The names relation and claim evidence give count
# like NER's: they are how an entity no mention names is known.
_KNOWN_NAMES: LiteralString = """
SELECT n.name, n.doc_id, e.type, bool_or(n.tier <> %(ner)s) AS read, count(*) AS uses
FROM (SELECT m.entity_id, m.name, c.doc_id, m.tier FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id
      UNION ALL SELECT r.subject_id, ev.subject_name, c.doc_id, %(ner)s FROM kg_relations r
      JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id
      UNION ALL SELECT r.object_id, ev.object_name, c.doc_id, %(ner)s FROM kg_relations r
      JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id JOIN chunks c ON c.chunk_id = ev.chunk_id
      UNION ALL SELECT cl.entity_id, cv.entity_name, c.doc_id, %(ner)s FROM kg_claims cl
      JOIN kg_claim_evidence cv ON cv.claim_id = cl.claim_id JOIN chunks c ON c.chunk_id = cv.chunk_id) AS n
JOIN kg_entities e ON e.entity_id = n.entity_id
GROUP BY n.name, n.doc_id, e.type
"""

# Mentions only, in chunks of the one class.
_KNOWN_NAMES_IN_CLASS: LiteralString = """
SELECT m.name, c.doc_id, e.type, bool_or(m.tier <> %(ner)s) AS read, count(*) AS uses
FROM kg_mentions m
JOIN chunks c ON c.chunk_id = m.chunk_id AND c.acl_class_id = %(acl)s
JOIN kg_entities e ON e.entity_id = m.entity_id
GROUP BY m.name, c.doc_id, e.type
"""

_FACT_COUNTS: LiteralString = """
SELECT (SELECT count(*) FROM kg_entities), (SELECT count(*) FROM kg_mentions),
       (SELECT count(*) FROM kg_relations), (SELECT count(*) FROM kg_relation_evidence),
       (SELECT count(*) FROM kg_claims), (SELECT count(*) FROM kg_claim_evidence),
       (SELECT count(*) FROM chunk_extractions), (SELECT count(*) FROM chunk_extractions WHERE pending_llm),
       (SELECT count(*) FROM extraction_cache), (SELECT count(*) FROM extraction_quarantine)
"""
_FACT_COUNT_NAMES = (
    "entities",
    "mentions",
    "relations",
    "relation_evidence",
    "claims",
    "claim_evidence",
    "chunks_extracted",
    "pending_llm",
    "cache_entries",
    "quarantined",
)

_UPSERT_RUN = """
INSERT INTO extraction_runs (run_id, scope, extractor_version, ontology_version, dry_run, status, preview, receipt,
                             done_chunk_ids, created_at, finished_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, COALESCE(%s::timestamptz, now()), %s)
ON CONFLICT (run_id) DO UPDATE SET
    scope = EXCLUDED.scope, extractor_version = EXCLUDED.extractor_version,
    ontology_version = EXCLUDED.ontology_version, dry_run = EXCLUDED.dry_run, status = EXCLUDED.status,
    preview = EXCLUDED.preview, receipt = EXCLUDED.receipt, done_chunk_ids = EXCLUDED.done_chunk_ids,
    finished_at = EXCLUDED.finished_at
"""

_SWEEP_FACTS: tuple[LiteralString, ...] = (
    "DELETE FROM kg_relations r WHERE NOT EXISTS (SELECT 1 FROM kg_relation_evidence e"
    " WHERE e.relation_id = r.relation_id)",
    "DELETE FROM kg_claims c WHERE NOT EXISTS (SELECT 1 FROM kg_claim_evidence e WHERE e.claim_id = c.claim_id)",
)

_SIGNED = 1 << 63
_UNSIGNED = 1 << 64


def cacheable(result: ChunkExtraction) -> bool:
    """Whether a result may answer for its text later.

    Not a pending one: tier 3 still owes the chunk a call, and a cache hit would waive it for good. Not a
    tier 0 skip: a duplicate's status depends on which other chunks exist, not on the text, and an exact
    duplicate has its representative's hash, so caching it would overwrite the representative's entry.
    """
    return not result.pending_llm and result.skip_reason is None


class PostgresExtractionStore(PostgresStore):
    """ExtractionStore (plus everything PostgresStore is) on one connection pool.

    Entity ids are keyed by the installation's secret (`kg_installation`, generated by the migration that
    created it; `use_entity_id_key` adopts an operator-set one), read once per store object.
    """

    def __init__(
        self,
        conn: psycopg.Connection[Row],
        *,
        dsn: str | None = None,
        pool_size: int = 1,
        kek: KeyEncryptionKey | None = None,
        encrypt: bool = True,
    ) -> None:
        super().__init__(conn, dsn=dsn, pool_size=pool_size, kek=kek, encrypt=encrypt)
        self._entity_key: bytes | None = None

    # --- the installation's entity-id key -----------------------------------------------------------------

    def use_entity_id_key(self, key: bytes) -> None:
        """Key entity ids with `key` (KGRAG_ENTITY_ID_KEY) instead of the generated one.

        Allowed while no entity is stored, or when `key` is the stored key already: changing it later would
        give the same name a second id. Otherwise CONFIGURATION_INVALID, and nothing changes.
        """
        if len(key) < 16:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                "the entity-id key must be at least 16 bytes",
                hint="set KGRAG_ENTITY_ID_KEY to a long random value (e.g. 64 hex digits)",
            )
        with self._lease, self._conn.transaction():
            conn = self._conn
            conn.execute("LOCK TABLE kg_installation IN EXCLUSIVE MODE")
            row = conn.execute("SELECT entity_id_key FROM kg_installation").fetchone()
            stored = bytes(row[0]) if row is not None else None
            if stored != key:
                if conn.execute("SELECT EXISTS (SELECT 1 FROM kg_entities)").fetchone() != (False,):
                    raise KgragError(
                        ErrorCode.CONFIGURATION_INVALID,
                        "KGRAG_ENTITY_ID_KEY differs from the key this database's entity ids were made with",
                        hint="unset it (the stored key is used), or set the key this installation already uses",
                    )
                conn.execute(
                    "INSERT INTO kg_installation (entity_id_key) VALUES (%s)"
                    " ON CONFLICT (singleton) DO UPDATE SET entity_id_key = EXCLUDED.entity_id_key",
                    (key,),
                )
        self._entity_key = key

    def entity_id_for(self, entity_type: str, name: str, strong_ids: Sequence[tuple[str, str]] = ()) -> str:
        """The id this installation gives an entity (for operators and tests; callers never see the key)."""
        return entity_id(entity_type, name, strong_ids, key=self._id_key())

    def name_index(self, name: str) -> tuple[str, list[str]]:
        """The blind indexes this installation stores for a name: its key and its tokens' keys (migration
        0010; for bulk loaders and tests, which write rows the way `save` does)."""
        key = self._id_key()
        return name_key(key, name), name_token_keys(key, name)

    def installation_key(self) -> bytes:
        """The installation's secret that keys entity ids and blind indexes (the text graph's node keys)."""
        return self._id_key()

    def _id_key(self) -> bytes:
        if self._entity_key is None:
            with self._lease:
                row = self._conn.execute("SELECT entity_id_key FROM kg_installation").fetchone()
            if row is None:  # cannot happen: the migration inserts it
                raise KgragError(ErrorCode.CONFIGURATION_INVALID, "kg_installation holds no entity-id key")
            self._entity_key = bytes(row[0])
        return self._entity_key

    # --- cache and per-chunk state ----------------------------------------------------------------------

    def cached(self, keys: Sequence[ExtractionKey]) -> dict[ExtractionKey, ChunkExtraction]:
        """Cached results by key. The result's chunk_id is the chunk that produced it, not necessarily yours."""
        if not keys:
            return {}
        with self._lease:
            rows = self._conn.execute(
                "SELECT x.content_hash, x.extractor_version, x.ontology_version, x.result, x.key_doc_id"
                " FROM extraction_cache x"
                " JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k(h, e, o)"
                " ON x.content_hash = k.h AND x.extractor_version = k.e AND x.ontology_version = k.o",
                (
                    [k.content_hash for k in keys],
                    [k.extractor_version for k in keys],
                    [k.ontology_version for k in keys],
                ),
            ).fetchall()
        out: dict[ExtractionKey, ChunkExtraction] = {}
        for r in rows:
            # Sealed under the producing document's key (ADR 0008); once that document is deleted the entry
            # does not open, and the text counts as never extracted.
            plain = self.cipher.open(r[4] or "", bytes(r[3]))
            if plain is not None:
                out[ExtractionKey(r[0], r[1], r[2])] = extraction_from_dict(json.loads(plain))
        return out

    def save(self, results: Sequence[ChunkExtraction]) -> None:
        """Cache each cacheable result and replace its chunk's state, facts and evidence, in one transaction.

        A chunk that is gone by now (its document changed or was deleted while it was being extracted) gets
        no state and no facts; its result is still cached, since the text's extraction is still valid.
        """
        if not results:
            return
        latest = {r.chunk_id: r for r in results}  # one batch naming a chunk twice: the last result wins
        chunk_ids = list(latest)
        with self._lease, self._conn.transaction():
            conn = self._conn
            # KEY SHARE: a concurrent deletion of these chunks waits for this transaction, so no evidence
            # is written for a chunk that is being removed.
            live: dict[str, str] = {
                r[0]: r[1]
                for r in conn.execute(
                    "SELECT chunk_id, doc_id FROM chunks WHERE chunk_id = ANY(%s) FOR KEY SHARE", (chunk_ids,)
                )
            }
            # Quotes and cached results are sealed under their chunk's document key (ADR 0008); quotes
            # deterministically, so quote_key still recognises a repeated quote.
            quote_sealers = {d: self.cipher.sealer(d, deterministic=True) for d in sorted(set(live.values()))}
            sealers = {d: self.cipher.sealer(d) for d in sorted(set(live.values()))}
            # A split (0011_namesakes) keys a document's mentions of a name into their sense's entity again.
            senses = {
                (r[0], r[1]): r[2]
                for r in conn.execute(
                    "SELECT group_id, doc_id, entity_id FROM er_senses WHERE doc_id = ANY(%s)",
                    (sorted(set(live.values())),),
                )
            }
            facts = _Facts(self._id_key(), senses)
            for result in latest.values():
                if result.chunk_id in live:
                    doc_id = live[result.chunk_id]
                    facts.add(result, quote_sealers[doc_id], doc_id)
            with conn.cursor() as cur:
                # A result whose chunk is gone is not cached: its text may belong to a deleted document.
                cache = [
                    _cache_params(r, live[r.chunk_id], sealers[live[r.chunk_id]])
                    for r in latest.values()
                    if cacheable(r) and r.chunk_id in live
                ]
                if cache:
                    cur.executemany(_UPSERT_CACHE, cache)
                kept = [r for r in latest.values() if r.chunk_id in live]
                if not kept:
                    return
                hold_merge_log(conn)  # before the entity rows below are locked: see hold_merge_log
                cur.executemany(_UPSERT_STATE, [_state_params(r) for r in kept])
                cur.executemany(
                    "UPDATE chunks SET extraction_tier = %s"
                    " WHERE chunk_id = %s AND extraction_tier IS DISTINCT FROM %s",
                    [(int(r.tier), r.chunk_id, int(r.tier)) for r in kept],
                )
                ids = [r.chunk_id for r in kept]
                # Replace, not merge: the triggers drop facts this leaves without evidence, and the inserts
                # below bring back (same deterministic IDs) those the new result still supports.
                cur.execute("DELETE FROM kg_mentions WHERE chunk_id = ANY(%s)", (ids,))
                cur.execute("DELETE FROM kg_relation_evidence WHERE chunk_id = ANY(%s)", (ids,))
                cur.execute("DELETE FROM kg_claim_evidence WHERE chunk_id = ANY(%s)", (ids,))
                for sql, params in facts.statements(lambda chunk: sealers[live[chunk]]):
                    if params:
                        cur.executemany(sql, params)
                # The replace above deleted and re-inserted entities whose only evidence it rewrote, and their
                # mapping rows went with them: curation decisions are re-applied from the merge log.
                recluster(conn, sorted(facts.entities))

    def states(self, chunk_ids: Sequence[str]) -> dict[str, ChunkExtractionState]:
        if not chunk_ids:
            return {}
        with self._lease:
            rows = self._conn.execute(
                "SELECT chunk_id, content_hash, tier, extractor_version, ontology_version, skip_reason,"
                " representative_chunk_id, pending_llm, items FROM chunk_extractions WHERE chunk_id = ANY(%s)",
                (list(chunk_ids),),
            ).fetchall()
        return {r[0]: ChunkExtractionState(r[0], r[1], Tier(r[2]), r[3], r[4], r[5], r[6], r[7], r[8]) for r in rows}

    def orphaned_duplicates(self, limit: int = 256) -> list[str]:
        """Live chunks that tier 0 recorded as copies of a chunk that has since been deleted, oldest first.

        The deleting transaction clears their representative (0008_duplicates_outlive_representatives.sql);
        the skip reason stays, which is what marks them until they are extracted again.
        """
        with self._lease:
            rows = self._conn.execute(
                "SELECT x.chunk_id FROM chunk_extractions x JOIN chunks c ON c.chunk_id = x.chunk_id"
                + _LIVE_CHUNKS
                + " LEFT JOIN chunk_minhash m ON m.chunk_id = x.chunk_id"
                " WHERE x.representative_chunk_id IS NULL AND x.skip_reason IN ('exact_duplicate', 'near_duplicate')"
                " ORDER BY m.seq NULLS LAST, x.chunk_id LIMIT %s",
                (limit,),
            ).fetchall()
        return [r[0] for r in rows]

    def quarantine(self, items: Sequence[Quarantined]) -> None:
        if not items:
            return
        with self._lease, self._conn.transaction():
            first = [q.chunk_ids[0] if q.chunk_ids else "" for q in items]
            owner: dict[str, str] = dict(
                self._conn.execute("SELECT chunk_id, doc_id FROM chunks WHERE chunk_id = ANY(%s)", (first,)).fetchall()
            )
            rows = []
            for q, chunk in zip(items, first, strict=True):
                # A reply naming no live chunk quotes nothing kgrag still holds a key for: kept as it came.
                doc = owner.get(chunk)
                reply = seal_text(self.cipher.sealer(doc), q.reply) if doc else b"\x00" + q.reply.encode("utf-8")
                rows.append((list(q.chunk_ids), q.reason, reply, q.extractor_version, doc))
            with self._conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO extraction_quarantine (chunk_ids, reason, reply, extractor_version, key_doc_id)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    rows,
                )

    def quarantined(self, limit: int = 100) -> list[Quarantined]:
        """The latest `limit` quarantined replies, newest first."""
        with self._lease:
            rows = self._conn.execute(
                "SELECT chunk_ids, reason, reply, extractor_version, key_doc_id FROM extraction_quarantine"
                " ORDER BY id DESC LIMIT %s",
                (limit,),
            ).fetchall()
        return [Quarantined(tuple(r[0]), r[1], self._text(r[4] or "", bytes(r[2])), r[3]) for r in rows]

    def purge_content(self, content_hashes: Sequence[str] | None = None) -> int:
        """Delete cache entries for texts no chunk has any more; None sweeps every such entry.

        Chunk rows exist only for live documents (deleted documents lose theirs), so this is what a
        compliance deletion calls after removing a document: no extracted quote of it stays behind.
        """
        if content_hashes is not None and not content_hashes:
            return 0
        with self._lease:
            cur = self._conn.execute(
                "DELETE FROM extraction_cache x WHERE (%s::text[] IS NULL OR x.content_hash = ANY(%s::text[]))"
                " AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = x.content_hash)",
                (
                    None if content_hashes is None else list(content_hashes),
                    None if content_hashes is None else list(content_hashes),
                ),
            )
        return cur.rowcount

    def sweep_orphans(self) -> int:
        """Remove facts without evidence and entities nothing refers to; return how many rows went.

        The triggers keep this at zero, except after a save that rolled back while a chunk deletion skipped
        the rows it had locked (see 0003_extraction.sql). Cheap enough for a periodic maintenance job.
        """
        with self._lease, self._conn.transaction():
            conn = self._conn
            before = _count(conn, "SELECT count(*) FROM kg_entities")
            facts = sum(conn.execute(sql).rowcount for sql in _SWEEP_FACTS)
            # (the triggers of the statements above already removed the entities those facts named)
            conn.execute("SELECT kg_drop_orphan_entities(ARRAY(SELECT entity_id FROM kg_entities))")
            return facts + before - _count(conn, "SELECT count(*) FROM kg_entities")

    # --- tier 0 near-duplicates ------------------------------------------------------------------------------

    def put_minhashes(self, entries: Sequence[tuple[MinHashEntry, Sequence[str]]]) -> None:
        """Store signatures and band keys (replacing a chunk's earlier ones); chunks already gone are skipped."""
        if not entries:
            return
        ids = [e.chunk_id for e, _ in entries]
        bands = [(key, e.chunk_id) for e, keys in entries for key in dict.fromkeys(keys)]
        with self._lease, self._conn.transaction(), self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO chunk_minhash (chunk_id, content_hash, doc_id, signature)"
                " SELECT c.chunk_id, %s, c.doc_id, %s FROM chunks c WHERE c.chunk_id = %s"
                " ON CONFLICT (chunk_id) DO UPDATE SET content_hash = EXCLUDED.content_hash,"
                " doc_id = EXCLUDED.doc_id, signature = EXCLUDED.signature",
                [(e.content_hash, [_to_signed(v) for v in e.signature], e.chunk_id) for e, _ in entries],
            )
            cur.execute("DELETE FROM chunk_lsh_bands WHERE chunk_id = ANY(%s)", (ids,))
            if bands:
                cur.execute(
                    "INSERT INTO chunk_lsh_bands (band_key, chunk_id)"
                    " SELECT b.band_key, b.chunk_id FROM unnest(%s::text[], %s::text[]) AS b(band_key, chunk_id)"
                    " JOIN chunk_minhash m ON m.chunk_id = b.chunk_id ON CONFLICT DO NOTHING",
                    ([b[0] for b in bands], [b[1] for b in bands]),
                )

    def minhash_candidates(
        self, band_keys: Sequence[str], exclude_doc_id: str | None = None, acl_class_id: str | None = None
    ) -> list[MinHashEntry]:
        if not band_keys:
            return []
        with self._lease:
            rows = self._conn.execute(
                # Starts from the band keys (an index lookup): without planner statistics (right after a
                # bulk load) the IN-subquery form was planned as a scan growing with store size x batch size.
                "WITH hit AS (SELECT DISTINCT b.chunk_id FROM chunk_lsh_bands b WHERE b.band_key = ANY(%s))"
                " SELECT m.chunk_id, m.content_hash, m.signature FROM hit"
                " JOIN chunk_minhash m ON m.chunk_id = hit.chunk_id"
                " JOIN chunks c ON c.chunk_id = m.chunk_id"
                + _LIVE_CHUNKS
                + " WHERE (%s::text IS NULL OR c.doc_id <> %s) AND (%s::text IS NULL OR c.acl_class_id = %s)"
                " ORDER BY m.seq",
                (list(band_keys), exclude_doc_id, exclude_doc_id, acl_class_id, acl_class_id),
            ).fetchall()
        return [MinHashEntry(r[0], r[1], tuple(_to_unsigned(v) for v in r[2])) for r in rows]

    def chunks_with_hash(self, content_hashes: Sequence[str], acl_class_id: str | None = None) -> dict[str, list[str]]:
        if not content_hashes:
            return {}
        with self._lease:
            rows = self._conn.execute(
                "SELECT c.content_hash, c.chunk_id FROM chunks c" + _LIVE_CHUNKS + " WHERE c.content_hash = ANY(%s)"
                " AND (%s::text IS NULL OR c.acl_class_id = %s)"
                " ORDER BY c.content_hash, c.indexed_at, c.doc_id, c.seq, c.chunk_id",
                (list(content_hashes), acl_class_id, acl_class_id),
            ).fetchall()
        out: dict[str, list[str]] = {}
        for h, chunk_id in rows:
            out.setdefault(h, []).append(chunk_id)
        return out

    def known_names(self, limit: int = 50_000, acl_class_id: str | None = None) -> dict[str, str]:
        """Surface form -> entity type; a name used for two types keeps the one a record or the model gave, else
        the commoner. With `acl_class_id`, only the mentions in chunks of that class count (their names, their
        types, which tier gave them): the scope one chunk is extracted in."""
        sql, params = (
            (_KNOWN_NAMES, {"ner": int(Tier.NER)})
            if acl_class_id is None
            else (_KNOWN_NAMES_IN_CLASS, {"ner": int(Tier.NER), "acl": acl_class_id})
        )
        with self._lease:
            rows = self._conn.execute(sql, params).fetchall()
        used: dict[tuple[str, str], tuple[bool, int]] = {}
        for sealed, doc_id, entity_type, read, uses in rows:
            name = open_text(self.cipher, doc_id, bytes(sealed))
            if name is not None:
                was_read, count = used.get((name, entity_type), (False, 0))
                used[(name, entity_type)] = (was_read or bool(read), count + int(uses))
        ranked = sorted(used, key=lambda k: (not used[k][0], -used[k][1], k[0], k[1]))[:limit]
        out: dict[str, str] = {}
        for name, entity_type in ranked:
            out.setdefault(name, entity_type)
        return out

    # --- reading facts back --------------------------------------------------------------------------------

    def claims(
        self, *, entity: str | None = None, attribute: str | None = None, acl_class_ids: Sequence[str] | None = None
    ) -> list[ClaimRecord]:
        """Claims with their status over what the caller may see, in written order."""
        params = {
            "entity": name_key(self._id_key(), entity) if entity is not None else None,
            "attribute": attribute,
            "admin": acl_class_ids is None,
            "acl": list(acl_class_ids or ()),
        }
        with self._lease:
            rows = self._conn.execute(_SELECT_CLAIMS, params).fetchall()
            body = self._active_ontology_body()
        return timeline([self._claim(r) for r in rows], _cardinality(body))

    def _claim(self, r: Row) -> ClaimRecord:
        """A claim row (see _SELECT_CLAIMS) with its entity name, value and quote opened under its chunk's
        document key."""
        doc = r[13]
        return _claim(r, self._text(doc, bytes(r[2])), self._text(doc, bytes(r[5])), self._text(doc, bytes(r[6])))

    def fact_counts(self) -> dict[str, int]:
        with self._lease:
            row = self._conn.execute(_FACT_COUNTS).fetchone()
        if row is None:  # cannot happen: a SELECT without FROM returns exactly one row
            raise RuntimeError("fact count query returned no row")
        return dict(zip(_FACT_COUNT_NAMES, (int(v) for v in row), strict=True))

    # --- ontology versions ----------------------------------------------------------------------------------

    def save_ontology(self, version: str, body: Mapping[str, object], *, activate: bool = True) -> None:
        """Store a validated ontology version (versions are immutable) and optionally make it the active one.

        Saving a version again with the same content only (re)activates it; with other content it fails with
        ONTOLOGY_INVALID. At most one version is active; `activate=False` leaves the active one as it is.
        """
        ontology = parse_ontology(body)  # raises ONTOLOGY_INVALID
        if ontology.version != version:
            raise KgragError(
                ErrorCode.ONTOLOGY_INVALID,
                f"the body says version {ontology.version!r}, saved as {version!r}",
                hint="save a body under the version it declares",
            )
        with self._lease, self._conn.transaction():
            conn = self._conn
            # Serialises activations: two at once would otherwise both clear and both set `active`.
            conn.execute("LOCK TABLE ontology_versions IN SHARE ROW EXCLUSIVE MODE")
            row = conn.execute("SELECT fingerprint FROM ontology_versions WHERE version = %s", (version,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO ontology_versions (version, body, fingerprint) VALUES (%s, %s, %s)",
                    (version, Jsonb(dict(body)), ontology.fingerprint),
                )
            elif row[0] != ontology.fingerprint:
                raise KgragError(
                    ErrorCode.ONTOLOGY_INVALID,
                    f"ontology version {version!r} already exists with different content",
                    hint="give the changed ontology a new version",
                )
            if activate:
                # Two statements: the one-active index is checked row by row, so clear before setting.
                conn.execute("UPDATE ontology_versions SET active = false WHERE active AND version <> %s", (version,))
                conn.execute("UPDATE ontology_versions SET active = true WHERE version = %s", (version,))

    def active_ontology(self) -> Mapping[str, object] | None:
        with self._lease:
            return self._active_ontology_body()

    def ontology_versions(self) -> list[str]:
        """Every stored version, oldest first."""
        with self._lease:
            rows = self._conn.execute("SELECT version FROM ontology_versions ORDER BY created_at, version").fetchall()
        return [r[0] for r in rows]

    def _active_ontology_body(self) -> Mapping[str, object] | None:
        row = self._conn.execute("SELECT body FROM ontology_versions WHERE active").fetchone()
        return dict(row[0]) if row is not None else None

    # --- re-extraction runs ------------------------------------------------------------------------------

    def save_run(self, run: ExtractionRun) -> None:
        with self._lease:
            self._conn.execute(
                _UPSERT_RUN,
                (
                    run.run_id,
                    Jsonb(_scope_to_dict(run.scope)),
                    run.extractor_version,
                    run.ontology_version,
                    run.dry_run,
                    run.status,
                    Jsonb(dataclasses.asdict(run.preview)),
                    Jsonb(dataclasses.asdict(run.receipt)) if run.receipt is not None else None,
                    list(run.done_chunk_ids),
                    _utc_or_none(run.created_at),
                    _utc_or_none(run.finished_at),
                ),
            )

    def get_run(self, run_id: str) -> ExtractionRun | None:
        rows = self._runs("WHERE run_id = %s", (run_id,))
        return rows[0] if rows else None

    def runs(self, limit: int = 50) -> list[ExtractionRun]:
        return self._runs("ORDER BY created_at DESC, run_id LIMIT %s", (limit,))

    def _runs(self, where: str, params: tuple[object, ...]) -> list[ExtractionRun]:
        with self._lease:
            rows = self._conn.execute(
                "SELECT run_id, scope, extractor_version, ontology_version, dry_run, status, preview, receipt,"
                " done_chunk_ids, created_at, finished_at FROM extraction_runs " + where,
                params,
            ).fetchall()
        return [
            ExtractionRun(
                run_id=r[0],
                scope=_scope_from_dict(r[1]),
                extractor_version=r[2],
                ontology_version=r[3],
                dry_run=r[4],
                status=r[5],
                preview=RunEstimate(**r[6]),
                receipt=RunEstimate(**r[7]) if r[7] is not None else None,
                done_chunk_ids=list(r[8]),
                created_at=_utc_or_none(r[9]),
                finished_at=_utc_or_none(r[10]),
            )
            for r in rows
        ]

    def chunks_in_scope(self, scope: RerunScope) -> list[Chunk]:
        with self._lease:
            rows = self._conn.execute(
                "SELECT " + _CHUNK_COLUMNS + " FROM chunks c" + _LIVE_CHUNKS + " WHERE"
                " (cardinality(%(docs)s::text[]) = 0 OR c.doc_id = ANY(%(docs)s::text[]))"
                " AND (cardinality(%(sources)s::text[]) = 0 OR d.source = ANY(%(sources)s::text[]))"
                " AND (cardinality(%(chunks)s::text[]) = 0 OR c.chunk_id = ANY(%(chunks)s::text[]))"
                " ORDER BY c.doc_id, c.seq",
                {"docs": list(scope.doc_ids), "sources": list(scope.sources), "chunks": list(scope.chunk_ids)},
            ).fetchall()
        chunks = [self._chunk(r) for r in rows]
        if not scope.contains_any:
            return chunks
        # Chunk texts are sealed (ADR 0008), so the text filter runs here, on the opened text, with
        # ILIKE's meaning: a case-insensitive substring.
        terms = [t.lower() for t in scope.contains_any]
        return [c for c in chunks if any(t in c.text.lower() for t in terms)]


# --- ChunkExtraction -> rows -------------------------------------------------------------------------------


class _Facts:
    """The rows a batch of results writes, deduplicated, in foreign-key order.

    Every name-like value is written sealed under its chunk's document key (deterministically: equal values
    of one document seal equal, so primary keys still dedupe) next to its blind indexes under the
    installation key (migration 0010); the entity row holds blind indexes only.
    """

    def __init__(self, key: bytes, senses: Mapping[tuple[str, str], str] | None = None) -> None:
        self.key = key
        self.senses = senses or {}  # (group id, doc id) -> the sense's entity id
        self.entities: dict[str, tuple[str, str, list[str], list[list[str]]]] = {}
        # (chunk, entity, name, quote) -> the mention's row but for its merged confidence and identifiers
        self.mentions: dict[tuple[str, str, str, str], tuple[Row, float, set[tuple[str, str]]]] = {}
        self.relations: dict[str, Row] = {}
        self.relation_evidence: list[Row] = []
        self.claims: dict[str, Row] = {}
        self.claim_evidence: list[Row] = []
        self._blinded: dict[str, tuple[str, list[str]]] = {}

    def _blind(self, name: str) -> tuple[str, list[str]]:
        """The name's blind indexes, computed once per batch (an entity row and its mentions share them)."""
        found = self._blinded.get(name)
        if found is None:
            found = self._blinded[name] = (name_key(self.key, name), name_token_keys(self.key, name))
        return found

    def _entity(self, doc_id: str, entity_type: str, name: str, strong_ids: Sequence[tuple[str, str]] = ()) -> str:
        group = entity_id(entity_type, name, strong_ids, key=self.key)
        key = self.senses.get((group, doc_id), group)
        blinded = strong_id_keys(self.key, strong_ids)
        known = self.entities.get(key)
        if known is None:
            blind, tokens = self._blind(name)
            known = (entity_type, blind, tokens, [])
        merged = sorted({(k, v) for k, v in known[3]} | {(k, v) for k, v in blinded})
        self.entities[key] = (known[0], known[1], known[2], [[k, v] for k, v in merged])
        return key

    def add(self, result: ChunkExtraction, seal: Sealer, doc_id: str) -> None:
        tier = int(result.tier)
        chunk = result.chunk_id
        # A relation endpoint or claim subject named like a mention of this chunk that carries a strong ID
        # is that entity: the item names it by surface form only.
        local: dict[tuple[str, str], str] = {}
        for m in result.entities:
            ent = self._entity(doc_id, m.type, m.name, m.strong_ids)
            local.setdefault((m.type, normalise_name(m.name)), ent)
            known = self.mentions.get((chunk, ent, m.name, m.quote))
            if known is None:
                row: Row = (
                    chunk,
                    ent,
                    seal_text(seal, m.name),
                    *self._blind(m.name),
                    tier,
                    seal_text(seal, m.quote),
                )
                known = (row, m.confidence, set())
            self.mentions[(chunk, ent, m.name, m.quote)] = (
                known[0],
                max(known[1], m.confidence),
                known[2] | set(m.strong_ids),
            )

        def resolve(entity_type: str, name: str) -> str:
            return local.get((entity_type, normalise_name(name))) or self._entity(doc_id, entity_type, name)

        for r in result.relations:
            subject, obj = resolve(r.subject_type, r.subject), resolve(r.object_type, r.object)
            rid = relation_id(subject, r.relation, obj, r.valid_from, r.polarity, r.modality)
            self.relations.setdefault(
                rid,
                (rid, subject, r.relation, obj, r.polarity.value, r.modality.value, r.valid_from, r.valid_to),
            )
            self.relation_evidence.append(
                (
                    rid,
                    chunk,
                    seal_text(seal, r.quote),
                    tier,
                    r.confidence,
                    seal_text(seal, r.subject),
                    seal_text(seal, r.object),
                )
            )
        for c in result.claims:
            ent = resolve(c.entity_type, c.entity)
            cid = claim_id(ent, c.attribute, c.value, c.valid_from, c.polarity, c.modality)
            self.claims.setdefault(
                cid, (cid, ent, c.attribute, c.polarity.value, c.modality.value, c.valid_from, c.valid_to)
            )
            self.claim_evidence.append(
                (
                    cid,
                    chunk,
                    seal_text(seal, c.quote),
                    tier,
                    c.confidence,
                    seal_text(seal, c.entity),
                    seal_text(seal, c.value),
                )
            )

    def statements(self, seal_ids: Callable[[str], Sealer]) -> list[tuple[str, list[Row]]]:
        """The statements and their rows; `seal_ids` gives the sealer of a chunk's document (the mention's
        identifiers are sealed like its name, but need not be deterministic)."""
        entities: list[Row] = [(k, t, nk, tokens, Jsonb(ids)) for k, (t, nk, tokens, ids) in self.entities.items()]
        mentions: list[Row] = [
            (*row, confidence, seal_ids(row[0])(json.dumps(sorted([list(p) for p in ids])).encode()) if ids else None)
            for row, confidence, ids in self.mentions.values()
        ]
        return [
            (_UPSERT_ENTITY, entities),
            (_INSERT_MENTION, mentions),
            (_INSERT_RELATION, list(self.relations.values())),
            (_INSERT_RELATION_EVIDENCE, self.relation_evidence),
            (_INSERT_CLAIM, list(self.claims.values())),
            (_INSERT_CLAIM_EVIDENCE, self.claim_evidence),
        ]


def _cache_params(result: ChunkExtraction, doc_id: str, seal: Sealer) -> Row:
    k = result.key
    return (
        k.content_hash,
        k.extractor_version,
        k.ontology_version,
        int(result.tier),
        seal(json.dumps(extraction_to_dict(result)).encode("utf-8")),
        doc_id,
    )


def _state_params(result: ChunkExtraction) -> Row:
    dropped = Counter(d.reason.value for d in result.dropped)
    k = result.key
    return (
        result.chunk_id,
        k.content_hash,
        int(result.tier),
        k.extractor_version,
        k.ontology_version,
        result.skip_reason.value if result.skip_reason is not None else None,
        result.representative_chunk_id,
        result.pending_llm,
        result.item_count,
        Jsonb(dict(sorted(dropped.items()))),
    )


# --- rows -> records ------------------------------------------------------------------------------------------


def _claim(r: Row, name: str, value: str, quote: str) -> ClaimRecord:
    written: date | None = r[11]
    return ClaimRecord(
        claim_id=r[0],
        entity_id=r[1],
        entity_name=name,
        entity_type=r[3],
        attribute=r[4],
        value=value,
        quote=quote,
        modality=Modality(r[7]),
        polarity=Polarity(r[8]),
        valid_from=r[9],
        valid_to=r[10],
        written_at=written,
        chunk_id=r[12],
        doc_id=r[13],
        acl_class_id=r[14],
        tier=Tier(r[15]),
        confidence=float(r[16]),
    )


def _count(conn: psycopg.Connection[Row], sql: LiteralString) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row is not None else 0


def _cardinality(body: Mapping[str, object] | None) -> Mapping[str, Cardinality]:
    # No active ontology: every attribute counts as single-valued (see claims.timeline).
    return cardinalities(parse_ontology(body)) if body is not None else {}


def _scope_to_dict(scope: RerunScope) -> dict[str, Any]:
    return {f.name: list(getattr(scope, f.name)) for f in dataclasses.fields(scope)}


def _scope_from_dict(data: Mapping[str, Any]) -> RerunScope:
    names = {f.name for f in dataclasses.fields(RerunScope)}
    return RerunScope(**{k: tuple(v) for k, v in data.items() if k in names})


def _to_signed(value: int) -> int:
    return value - _UNSIGNED if value >= _SIGNED else value


def _to_unsigned(value: int) -> int:
    return value + _UNSIGNED if value < 0 else value
