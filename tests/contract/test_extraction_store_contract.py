"""PostgresExtractionStore against the ExtractionStore contract, plus what only the SQL store promises."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from kgrag_adapters.postgres.extraction_store import PostgresExtractionStore
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.model import ClaimItem, EntityMention
from kgrag_testing.contracts.entity_ids import CONTRACT_ENTITY_KEY, contract_entity_id
from kgrag_testing.contracts.extraction_store import (
    ONTOLOGY,
    PRIYA,
    ExtractionStoreContract,
    Stores,
    commit_doc,
    counts,
    delete_doc,
    mention,
    priya,
    result,
)


@pytest.fixture
def stores(pg_dsn: str) -> Iterator[Stores]:
    # Documents through a plain PostgresStore on its own connection, as the chunk indexer writes them:
    # the clean-up of facts must not depend on the extraction store doing the deleting.
    with PostgresExtractionStore.connect(pg_dsn) as extraction, PostgresStore.connect(pg_dsn) as documents:
        extraction.use_entity_id_key(CONTRACT_ENTITY_KEY)
        yield Stores(extraction, documents)


class TestPostgresExtractionStore(ExtractionStoreContract):
    pass


def test_one_object_serves_both_ports(pg_dsn: str) -> None:
    with PostgresExtractionStore.connect(pg_dsn) as store:
        both = Stores(store, store)
        [chunk] = commit_doc(both, "doc-1", [PRIYA])
        store.save([priya(chunk)])
        assert counts(both, "claims") == (1,)
        delete_doc(both, "doc-1")
        assert counts(both, "claims", "entities") == (0, 0)


def test_save_records_the_tier_on_the_chunk(stores: Stores, pg_dsn: str) -> None:
    [chunk] = commit_doc(stores, "doc-1", [PRIYA])
    stores.extraction.save([priya(chunk)])
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute("SELECT extraction_tier FROM chunks WHERE chunk_id = %s", (chunk.chunk_id,)).fetchone()
    assert row == (3,)


def test_one_active_ontology_is_enforced_by_the_schema(stores: Stores, pg_dsn: str) -> None:
    stores.extraction.save_ontology("1", ONTOLOGY)
    stores.extraction.save_ontology("2", {**ONTOLOGY, "version": "2"}, activate=False)
    with psycopg.connect(pg_dsn) as conn, pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("UPDATE ontology_versions SET active = true WHERE version = '2'")


def test_chunk_deletion_does_not_wait_for_or_undo_a_concurrent_save(stores: Stores, pg_dsn: str) -> None:
    """A save in flight has locked the entity it refers to: the clean-up skips it instead of blocking."""
    [gone] = commit_doc(stores, "doc-gone", ["Routing team notes"])
    [kept] = commit_doc(stores, "doc-kept", ["More about Routing"])
    stores.extraction.save([result(gone, entities=[mention("Routing", "Team")])])
    x = stores.extraction
    assert isinstance(x, PostgresExtractionStore)
    routing = x.entity_id_for("Team", "Routing")
    seal = x.cipher.sealer("doc-kept", deterministic=True)
    blind, tokens = x.name_index("Routing")
    with psycopg.connect(pg_dsn) as saving:  # not autocommit: the transaction stays open
        # What save does for `kept`: upsert the entity (locking it), then add its mention (name and quote
        # sealed under the document's key, the name blinded under the installation's: migration 0010).
        saving.execute(
            "INSERT INTO kg_entities (entity_id, type, name_key, name_tokens) VALUES (%s, 'Team', %s, %s)"
            " ON CONFLICT (entity_id) DO UPDATE SET strong_ids = kg_entities.strong_ids",
            (routing, blind, tokens),
        )
        saving.execute(
            "INSERT INTO kg_mentions (chunk_id, entity_id, name, name_key, name_tokens, tier, quote, confidence)"
            " VALUES (%s, %s, %s, %s, %s, 3, %s, 0.9)",
            (kept.chunk_id, routing, seal(b"Routing"), blind, tokens, seal(b"Routing")),
        )
        with psycopg.connect(pg_dsn, autocommit=True) as deleting:
            deleting.execute("SET lock_timeout = '5s'")  # without SKIP LOCKED this would wait, then fail
            with PostgresStore(deleting) as documents:
                delete_doc(Stores(stores.extraction, documents), "doc-gone")
        saving.commit()
    assert counts(stores, "entities", "mentions") == (1, 1)
    assert stores.extraction.known_names() == {"Routing": "Team"}


def test_sweep_removes_what_a_rolled_back_save_left_behind(stores: Stores, pg_dsn: str) -> None:
    [chunk] = commit_doc(stores, "doc-1", [PRIYA])
    x = stores.extraction
    assert isinstance(x, PostgresExtractionStore)
    x.save([priya(chunk)])
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        # Evidence gone without the triggers (as if a clean-up had skipped rows a rolled-back save held).
        for table in ("kg_mentions", "kg_relation_evidence", "kg_claim_evidence"):
            conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(sql.Identifier(table)))
            conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(table)))
    assert counts(stores, "entities", "relations", "claims") == (3, 1, 1)
    assert x.sweep_orphans() == 5
    assert counts(stores, "entities", "relations", "claims") == (0, 0, 0)
    assert x.sweep_orphans() == 0


def test_long_quotes_are_stored(stores: Stores) -> None:
    """A tier 1 record may quote a long row: the quote is in the key only through its hash."""
    words = [f"w{(i * 7919) % 10007:05d}x{(i * 104729) % 9973:04d}" for i in range(900)]
    text = "Routing " + " ".join(words)
    [chunk] = commit_doc(stores, "doc-1", [text])
    long_claim = ClaimItem("Routing", "Team", "status", "active", text, 0.9)
    stores.extraction.save([result(chunk, entities=[EntityMention("Routing", "Team", text, 0.9)], claims=[long_claim])])
    [claim] = stores.extraction.claims(entity="Routing")
    assert claim.quote == text
    assert counts(stores, "mentions", "claim_evidence") == (1, 1)


def test_entity_ids_are_keyed_per_installation(pg_dsn: str) -> None:
    """An installation's ids come from its own generated key: not computable from a name by an outsider
    (neither the unkeyed formula nor another installation's key gives them), yet the same on every call."""
    with PostgresExtractionStore.connect(pg_dsn) as store:
        [chunk] = commit_doc(Stores(store, store), "doc-1", ["Routing team notes"])
        store.save([result(chunk, entities=[mention("Routing", "Team")])])
        with psycopg.connect(pg_dsn) as conn:
            [(stored,)] = conn.execute("SELECT entity_id FROM kg_entities").fetchall()
        assert stored == store.entity_id_for("Team", " routing.")
        assert stored != contract_entity_id("Team", "Routing")  # another key
        assert stored != "ent_" + hashlib.sha256(b"Team\x1frouting").hexdigest()[:20]  # no key
        with PostgresExtractionStore.connect(pg_dsn) as again:  # the key is the installation's, not the process's
            assert again.entity_id_for("Team", "Routing") == stored
        # With entities stored, another key would give the same name a second id: refused, nothing changes.
        with pytest.raises(KgragError) as err:
            store.use_entity_id_key(b"an operator's new key, too late")
        assert err.value.code is ErrorCode.CONFIGURATION_INVALID
        assert store.entity_id_for("Team", "Routing") == stored
        with pytest.raises(KgragError):
            store.use_entity_id_key(b"short")
