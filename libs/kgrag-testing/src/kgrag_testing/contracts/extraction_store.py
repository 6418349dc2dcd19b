"""Contract suite for the ExtractionStore port.

Subclass `ExtractionStoreContract` in a `Test*` class and provide a `stores` fixture that yields a fresh,
empty `Stores`: the extraction store under test and the document store it sits next to (facts hang off
chunks, so the suite commits and deletes documents through it). Both may be the same object. Every test
starts from empty stores, so counts are exact.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

import pytest

from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk, DocumentStatus
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.model import (
    ChunkExtraction,
    ClaimItem,
    DroppedItem,
    DropReason,
    EntityMention,
    ExtractionKey,
    Modality,
    Polarity,
    Quarantined,
    RelationItem,
    SkipReason,
    Tier,
)
from kgrag_core.extraction.records import (
    ChunkExtractionState,
    ClaimStatus,
    ExtractionRun,
    MinHashEntry,
    RerunScope,
    RunEstimate,
)
from kgrag_core.ingest import DeletionRecord
from kgrag_core.ports import DocumentStore, ExtractionStore
from kgrag_testing.contracts.document_store import ENG, make_document
from kgrag_testing.contracts.entity_ids import contract_entity_id


class DocumentWriter(DocumentStore, Protocol):
    """What the suite needs of the document side: DocumentStore's commits, ACL updates and deletions."""


class PurgingExtractionStore(ExtractionStore, Protocol):
    """The port plus the compliance purge of cache entries whose text no chunk has any more."""

    def purge_content(self, content_hashes: Sequence[str] | None = None) -> int: ...


@dataclasses.dataclass(frozen=True)
class Stores:
    extraction: PurgingExtractionStore
    documents: DocumentWriter


EXTRACTOR = "contract-x1"
ONTOLOGY_VERSION = "1"
HR = AclClass.of(["group:hr"])
JAN = datetime(2024, 1, 15, 9, 0, tzinfo=UTC)
FEB = datetime(2024, 2, 15, 9, 0, tzinfo=UTC)
MAR = datetime(2024, 3, 15, 9, 0, tzinfo=UTC)

ONTOLOGY: dict[str, object] = {
    "version": ONTOLOGY_VERSION,
    "entity_types": {"Person": {"strong_ids": ["email"]}, "Team": {}, "Site": {}, "System": {}},
    "relation_types": {"LEADS": {"subject": ["Person"], "object": ["Team", "Site"]}},
    "attributes": {
        "capacity_pallets": {"entity_types": ["Site"], "type": "integer", "cardinality": "single"},
        "language": {"entity_types": ["System"], "type": "string", "cardinality": "multi"},
    },
}


def commit_doc(
    stores: Stores,
    doc_id: str,
    sections: Sequence[str],
    *,
    at: datetime | None = JAN,
    acl: AclClass = ENG,
    version: int = 1,
) -> list[Chunk]:
    doc, chunks = make_document(doc_id, sections, acl=acl, version=version, modified_at=at)
    stores.documents.commit_document(doc, acl, chunks)
    return chunks


def delete_doc(stores: Stores, doc_id: str) -> None:
    stores.documents.mark_deleted(doc_id, DeletionRecord(doc_id, (), (), ("postgres",), MAR))


def key(chunk: Chunk, extractor: str = EXTRACTOR) -> ExtractionKey:
    return ExtractionKey(chunk.content_hash, extractor, ONTOLOGY_VERSION)


def result(
    chunk: Chunk,
    *,
    entities: Sequence[EntityMention] = (),
    relations: Sequence[RelationItem] = (),
    claims: Sequence[ClaimItem] = (),
    tier: Tier = Tier.LLM,
    dropped: Sequence[DroppedItem] = (),
    skip_reason: SkipReason | None = None,
    representative_chunk_id: str | None = None,
    pending_llm: bool = False,
) -> ChunkExtraction:
    return ChunkExtraction(
        chunk.chunk_id, key(chunk), tier, tuple(entities), tuple(relations), tuple(claims), tuple(dropped),
        skip_reason, representative_chunk_id, pending_llm,
    )  # fmt: skip


def mention(name: str, type_: str, *, strong_ids: tuple[tuple[str, str], ...] = ()) -> EntityMention:
    return EntityMention(name, type_, name, 0.9, strong_ids)


def leads(person: str, team: str, quote: str, *, valid_from: date | None = None) -> RelationItem:
    return RelationItem(person, "Person", "LEADS", team, "Team", quote, 0.8, valid_from=valid_from)


def capacity(
    site: str,
    value: str,
    quote: str,
    *,
    modality: Modality = Modality.FACT,
    polarity: Polarity = Polarity.POSITIVE,
    valid_from: date | None = None,
) -> ClaimItem:
    return ClaimItem(site, "Site", "capacity_pallets", value, quote, 0.9, polarity, modality, valid_from)


def priya(chunk: Chunk) -> ChunkExtraction:
    """The facts of PRIYA: two mentions, one relation, one claim about a third entity."""
    return result(
        chunk,
        entities=[mention("Priya Raman", "Person"), mention("Routing", "Team")],
        relations=[leads("Priya Raman", "Routing", "Priya Raman leads the Routing team")],
        claims=[capacity("LEJ-2", "24,500", "LEJ-2 holds 24,500 pallets")],
    )


def counts(stores: Stores, *names: str) -> tuple[int, ...]:
    got = stores.extraction.fact_counts()
    return tuple(got[n] for n in names)


FACTS = ("entities", "mentions", "relations", "relation_evidence", "claims", "claim_evidence")

PRIYA = "Priya Raman leads the Routing team. LEJ-2 holds 24,500 pallets."


class ExtractionStoreContract:
    def test_implements_the_port(self, stores: Stores) -> None:
        assert isinstance(stores.extraction, ExtractionStore)

    def test_new_store_is_empty(self, stores: Stores) -> None:
        x = stores.extraction
        assert x.cached([ExtractionKey("h", "e", "o")]) == {}
        assert x.cached([]) == {}
        assert x.states(["ch_missing"]) == {}
        assert x.quarantined() == []
        assert x.minhash_candidates(["b1"]) == []
        assert x.chunks_with_hash(["h"]) == {}
        assert x.known_names() == {}
        assert x.claims() == []
        assert set(x.fact_counts().values()) == {0}
        assert x.active_ontology() is None
        assert x.ontology_versions() == []
        assert x.get_run("missing") is None
        assert x.chunks_in_scope(RerunScope()) == []

    # --- cache and state ----------------------------------------------------------------------------

    def test_cache_round_trip(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", [PRIYA])
        dropped = (DroppedItem("relation", DropReason.QUOTE_NOT_FOUND, "no such words"),)
        stored = result(
            chunk,
            entities=[mention("Priya Raman", "Person", strong_ids=(("email", "priya@example.com"),))],
            relations=[leads("Priya Raman", "Routing", "Priya Raman leads", valid_from=date(2024, 1, 1))],
            claims=[capacity("LEJ-2", "24,500", "24,500 pallets", modality=Modality.PLAN, polarity=Polarity.NEGATIVE)],
            dropped=dropped,
        )
        x = stores.extraction
        x.save([stored])
        other = ExtractionKey(chunk.content_hash, "another-extractor", ONTOLOGY_VERSION)
        assert x.cached([key(chunk), other]) == {key(chunk): stored}
        assert x.states([chunk.chunk_id, "ch_missing"]) == {
            chunk.chunk_id: ChunkExtractionState(
                chunk.chunk_id, chunk.content_hash, Tier.LLM, EXTRACTOR, ONTOLOGY_VERSION, None, None, False, 3
            )
        }

    def test_pending_and_skipped_results_are_not_cached(self, stores: Stores) -> None:
        a, b, c = commit_doc(stores, "doc-1", ["pending text", "boilerplate text", "duplicate text"])
        x = stores.extraction
        x.save(
            [
                result(a, tier=Tier.NER, pending_llm=True),
                result(b, tier=Tier.FILTER, skip_reason=SkipReason.BOILERPLATE),
                result(c, tier=Tier.FILTER, skip_reason=SkipReason.NEAR_DUPLICATE, representative_chunk_id=a.chunk_id),
            ]
        )
        assert x.cached([key(a), key(b), key(c)]) == {}  # a cache hit would waive tier 3 for good
        states = x.states([a.chunk_id, b.chunk_id, c.chunk_id])
        assert states[a.chunk_id].pending_llm is True
        assert states[b.chunk_id].skip_reason == SkipReason.BOILERPLATE.value
        assert states[c.chunk_id].representative_chunk_id == a.chunk_id
        assert states[c.chunk_id].tier is Tier.FILTER

    def test_known_names_prefer_the_type_a_model_or_record_gave_over_ners_commoner_guess(self, stores: Stores) -> None:
        text = "Harbor stalled. Harbor restarted. Harbor is the WMS."
        guessed, guessed_too, read = commit_doc(stores, "doc-1", [text, text + " Again.", text + " Once more."])
        x = stores.extraction
        ner = [mention("Harbor", "Organization")]
        x.save([result(guessed, entities=ner, tier=Tier.NER), result(guessed_too, entities=ner, tier=Tier.NER)])
        assert x.known_names() == {"Harbor": "Organization"}
        x.save([result(read, entities=[mention("Harbor", "System")], tier=Tier.LLM)])
        assert x.known_names() == {"Harbor": "System"}

    def test_save_is_idempotent(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", [PRIYA])
        x = stores.extraction
        x.save([priya(chunk)])
        once = x.fact_counts()
        assert counts(stores, *FACTS) == (3, 2, 1, 1, 1, 1)  # Priya, Routing, LEJ-2
        x.save([priya(chunk)])
        x.save([priya(chunk), priya(chunk)])
        assert x.fact_counts() == once
        assert len(x.claims()) == 1

    def test_save_replaces_the_chunks_facts(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", [PRIYA])
        x = stores.extraction
        x.save([priya(chunk)])
        x.save([result(chunk, claims=[capacity("LEJ-2", "24,500", "LEJ-2 holds 24,500 pallets")])])
        assert counts(stores, *FACTS) == (1, 0, 0, 0, 1, 1)  # only LEJ-2 and its claim are left
        assert x.known_names() == {"LEJ-2": "Site"}
        assert x.states([chunk.chunk_id])[chunk.chunk_id].items == 1

    def test_save_for_a_chunk_that_is_gone_writes_no_facts(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", [PRIYA])
        delete_doc(stores, "doc-1")
        x = stores.extraction
        x.save([priya(chunk)])
        assert x.states([chunk.chunk_id]) == {}
        assert counts(stores, *FACTS) == (0,) * 6
        # Nor is it cached: the text was a deleted document's, and the cache would keep it (ADR 0008).
        assert x.cached([key(chunk)]) == {}

    def test_strong_id_names_one_entity(self, stores: Stores) -> None:
        a, b = commit_doc(stores, "doc-1", ["Priya (priya@x.org) leads Routing.", "P. Raman (PRIYA@x.org) agreed."])
        x = stores.extraction
        x.save([
            result(a, entities=[mention("Priya", "Person", strong_ids=(("email", "priya@x.org"),))],
                   relations=[leads("Priya", "Routing", "Priya (priya@x.org) leads Routing")]),
            result(b, entities=[mention("P. Raman", "Person", strong_ids=(("email", "PRIYA@x.org"),))]),
        ])  # fmt: skip
        # one Person (the email), one Team; the relation's subject is the mention with the email
        assert counts(stores, "entities", "mentions", "relations") == (2, 2, 1)
        assert x.known_names()["Priya"] == "Person"
        assert x.known_names()["P. Raman"] == "Person"

    # --- facts follow their evidence -------------------------------------------------------------------

    def test_facts_go_when_their_only_chunk_changes(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", [PRIYA])
        stores.extraction.save([priya(chunk)])
        [new] = commit_doc(stores, "doc-1", ["Nothing to see here any more."], version=2)
        assert new.chunk_id != chunk.chunk_id
        assert counts(stores, *FACTS) == (0,) * 6
        assert stores.extraction.claims() == []
        assert stores.extraction.states([chunk.chunk_id]) == {}

    def test_facts_go_when_their_document_is_deleted(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", [PRIYA])
        stores.extraction.save([priya(chunk)])
        delete_doc(stores, "doc-1")
        assert counts(stores, *FACTS, "chunks_extracted") == (0,) * 7
        assert stores.extraction.known_names() == {}

    def test_fact_with_evidence_elsewhere_survives(self, stores: Stores) -> None:
        [a] = commit_doc(stores, "doc-a", [PRIYA])
        [b] = commit_doc(stores, "doc-b", ["Copy: " + PRIYA])
        x = stores.extraction
        x.save([priya(a), priya(b)])
        assert counts(stores, *FACTS) == (3, 4, 1, 2, 1, 2)
        delete_doc(stores, "doc-a")
        assert counts(stores, *FACTS) == (3, 2, 1, 1, 1, 1)
        [claim] = x.claims()
        assert (claim.chunk_id, claim.doc_id) == (b.chunk_id, "doc-b")
        delete_doc(stores, "doc-b")
        assert counts(stores, *FACTS) == (0,) * 6

    def test_kept_chunk_keeps_its_facts_when_another_changes(self, stores: Stores) -> None:
        kept, changed = commit_doc(stores, "doc-1", [PRIYA, "LEJ-3 holds 9,000 pallets."])
        x = stores.extraction
        x.save(
            [
                priya(kept),
                result(changed, claims=[capacity("LEJ-3", "9,000", "LEJ-3 holds 9,000 pallets")]),
            ]
        )
        commit_doc(stores, "doc-1", [PRIYA, "LEJ-3 is closed."], version=2)
        assert [c.entity_name for c in x.claims()] == ["LEJ-2"]
        assert counts(stores, *FACTS) == (3, 2, 1, 1, 1, 1)

    def test_entity_named_only_by_a_relation_goes_with_it(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", ["Ana leads Billing."])
        x = stores.extraction
        x.save([result(chunk, relations=[leads("Ana", "Billing", "Ana leads Billing")])])
        assert counts(stores, "entities", "relations") == (2, 1)
        x.save([result(chunk)])
        assert counts(stores, "entities", "relations", "relation_evidence") == (0, 0, 0)

    # --- claims -------------------------------------------------------------------------------------------

    def test_claims_filter_by_acl(self, stores: Stores) -> None:
        [eng] = commit_doc(stores, "doc-eng", ["LEJ-2 holds 24,500 pallets."], acl=ENG)
        [hr] = commit_doc(stores, "doc-hr", ["LEJ-2 holds 30,000 pallets."], acl=HR, at=FEB)
        x = stores.extraction
        x.save(
            [
                result(eng, claims=[capacity("LEJ-2", "24,500", "24,500 pallets")]),
                result(hr, claims=[capacity("LEJ-2", "30,000", "30,000 pallets")]),
            ]
        )
        assert [c.value for c in x.claims(acl_class_ids=[ENG.acl_class_id])] == ["24,500"]
        assert [c.value for c in x.claims(acl_class_ids=[HR.acl_class_id])] == ["30,000"]
        assert x.claims(acl_class_ids=[]) == []
        assert [c.value for c in x.claims()] == ["24,500", "30,000"]  # admin sees both
        # The caller who cannot see the February document sees the January value as current.
        [visible] = x.claims(acl_class_ids=[ENG.acl_class_id])
        assert (visible.status, visible.acl_class_id) == (ClaimStatus.CURRENT, ENG.acl_class_id)

    def test_claims_follow_acl_changes(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", ["LEJ-2 holds 24,500 pallets."], acl=ENG)
        x = stores.extraction
        x.save([result(chunk, claims=[capacity("LEJ-2", "24,500", "24,500 pallets")])])
        assert stores.documents.update_acl("doc-1", HR) is True
        assert x.claims(acl_class_ids=[ENG.acl_class_id]) == []
        [claim] = x.claims(acl_class_ids=[HR.acl_class_id])
        assert claim.acl_class_id == HR.acl_class_id

    def test_claims_supersede_by_date_written(self, stores: Stores) -> None:
        x = stores.extraction
        x.save_ontology(ONTOLOGY_VERSION, ONTOLOGY)
        [feb] = commit_doc(stores, "doc-feb", ["In February LEJ-2 holds 30,000 pallets."], at=FEB)
        [jan] = commit_doc(stores, "doc-jan", ["LEJ-2 holds 24,500 pallets since June 2023."], at=JAN)
        x.save(
            [
                # valid_from says 2023 but it was written in January: the February document is newer.
                result(jan, claims=[capacity("LEJ-2", "24,500", "24,500 pallets", valid_from=date(2023, 6, 1))]),
                result(feb, claims=[capacity("LEJ-2", "30,000", "30,000 pallets")]),
            ]
        )
        old, new = x.claims(entity="lej-2", attribute="capacity_pallets")
        assert (old.value, old.written_at, old.status) == ("24,500", JAN.date(), ClaimStatus.SUPERSEDED)
        assert old.superseded_by == new.claim_id
        assert (new.value, new.written_at, new.status) == ("30,000", FEB.date(), ClaimStatus.CURRENT)
        assert (new.entity_name, new.entity_type, new.doc_id) == ("LEJ-2", "Site", "doc-feb")
        assert x.claims(entity="LEJ-9") == []
        assert x.claims(attribute="headcount") == []

    def test_same_day_disagreement_is_a_conflict(self, stores: Stores) -> None:
        x = stores.extraction
        x.save_ontology(ONTOLOGY_VERSION, ONTOLOGY)
        [a] = commit_doc(stores, "doc-a", ["LEJ-2 holds 24,500 pallets."], at=FEB)
        [b] = commit_doc(stores, "doc-b", ["LEJ-2 holds 26,000 pallets."], at=FEB + timedelta(hours=3))
        x.save(
            [
                result(a, claims=[capacity("LEJ-2", "24,500", "24,500 pallets")]),
                result(b, claims=[capacity("LEJ-2", "26,000", "26,000 pallets")]),
            ]
        )
        first, second = x.claims(entity="LEJ-2")
        assert {first.status, second.status} == {ClaimStatus.CONFLICT}
        assert first.conflicts_with == (second.claim_id,)
        assert second.conflicts_with == (first.claim_id,)

    def test_multi_valued_attributes_and_plans_never_supersede(self, stores: Stores) -> None:
        x = stores.extraction
        x.save_ontology(ONTOLOGY_VERSION, ONTOLOGY)
        [a] = commit_doc(stores, "doc-a", ["Billing is written in Go."], at=JAN)
        [b] = commit_doc(stores, "doc-b", ["Billing also uses Rust. We plan 40,000 pallets at LEJ-2."], at=FEB)
        lang = ClaimItem("Billing", "System", "language", "Go", "written in Go", 0.9)
        x.save([
            result(a, claims=[lang]),
            result(b, claims=[
                dataclasses.replace(lang, value="Rust", quote="also uses Rust"),
                capacity("LEJ-2", "40,000", "We plan 40,000 pallets", modality=Modality.PLAN),
            ]),
        ])  # fmt: skip
        by_value = {c.value: c.status for c in x.claims()}
        assert by_value == {"Go": ClaimStatus.CURRENT, "Rust": ClaimStatus.CURRENT, "40,000": ClaimStatus.NOT_A_FACT}

    # --- tier 0 ---------------------------------------------------------------------------------------------

    def test_minhash_candidates(self, stores: Stores) -> None:
        a, b = commit_doc(stores, "doc-a", ["alpha text", "beta text"])
        [c] = commit_doc(stores, "doc-c", ["alpha text again"])
        big = (1 << 64) - 1  # unsigned 64-bit hash values survive storage
        x = stores.extraction
        x.put_minhashes(
            [
                (MinHashEntry(a.chunk_id, a.content_hash, (1, 2, big)), ["band0:x", "band1:y"]),
                (MinHashEntry(b.chunk_id, b.content_hash, (5, 6, 7)), ["band0:z"]),
            ]
        )
        x.put_minhashes([(MinHashEntry(c.chunk_id, c.content_hash, (1, 2, 3)), ["band1:y"])])
        got = x.minhash_candidates(["band1:y", "band9:none"])
        assert [e.chunk_id for e in got] == [a.chunk_id, c.chunk_id]  # oldest first
        assert got[0] == MinHashEntry(a.chunk_id, a.content_hash, (1, 2, big))
        assert [e.chunk_id for e in x.minhash_candidates(["band1:y"], exclude_doc_id="doc-a")] == [c.chunk_id]
        assert x.minhash_candidates([]) == []
        # re-putting a chunk replaces its bands
        x.put_minhashes([(MinHashEntry(a.chunk_id, a.content_hash, (1, 2, 3)), ["band0:q"])])
        assert [e.chunk_id for e in x.minhash_candidates(["band1:y"])] == [c.chunk_id]
        delete_doc(stores, "doc-c")
        assert x.minhash_candidates(["band1:y", "band0:q"]) == [MinHashEntry(a.chunk_id, a.content_hash, (1, 2, 3))]

    def test_deleting_a_representative_orphans_its_duplicates_and_keeps_their_facts(self, stores: Stores) -> None:
        [a] = commit_doc(stores, "doc-a", [PRIYA])
        [b] = commit_doc(stores, "doc-b", [PRIYA])
        [c] = commit_doc(stores, "doc-c", [PRIYA + " Noted."])
        [d] = commit_doc(stores, "doc-d", [PRIYA + " Noted twice."])
        x = stores.extraction
        x.put_minhashes([(MinHashEntry(ch.chunk_id, ch.content_hash, (1, 2, 3)), ["band0:p"]) for ch in (a, b, c, d)])
        own = [mention("Priya Raman", "Person")]
        dup = functools.partial(result, entities=own, tier=Tier.FILTER)
        x.save(
            [
                result(a, entities=own, tier=Tier.NER),
                dup(b, skip_reason=SkipReason.EXACT_DUPLICATE, representative_chunk_id=a.chunk_id),
                dup(c, skip_reason=SkipReason.NEAR_DUPLICATE, representative_chunk_id=a.chunk_id),
                dup(d, skip_reason=SkipReason.NEAR_DUPLICATE, representative_chunk_id=c.chunk_id),
            ]
        )
        assert x.orphaned_duplicates() == []
        delete_doc(stores, "doc-d")  # a duplicate going orphans nothing
        assert x.orphaned_duplicates() == []
        delete_doc(stores, "doc-a")
        # The copies keep their own evidence; nothing points at the deleted chunk, and both are listed
        # (oldest first) for extraction again. The skip reason stays: it is what marks them.
        assert counts(stores, "entities", "mentions") == (1, 2)
        states = x.states([b.chunk_id, c.chunk_id])
        assert [states[ch.chunk_id].representative_chunk_id for ch in (b, c)] == [None, None]
        assert states[c.chunk_id].skip_reason == SkipReason.NEAR_DUPLICATE.value
        assert x.orphaned_duplicates() == [b.chunk_id, c.chunk_id]
        assert x.orphaned_duplicates(limit=1) == [b.chunk_id]
        # Extracted again (b promoted to representative, c its duplicate): no orphan is left.
        x.save(
            [
                result(b, entities=own, tier=Tier.NER),
                dup(c, skip_reason=SkipReason.NEAR_DUPLICATE, representative_chunk_id=b.chunk_id),
            ]
        )
        assert x.orphaned_duplicates() == []

    def test_a_representative_dropped_by_a_changed_document_orphans_its_duplicates(self, stores: Stores) -> None:
        [a] = commit_doc(stores, "doc-a", [PRIYA])
        [b] = commit_doc(stores, "doc-b", [PRIYA])
        x = stores.extraction
        x.save(
            [
                result(a, entities=[mention("Priya Raman", "Person")], tier=Tier.NER),
                result(
                    b,
                    entities=[mention("Priya Raman", "Person")],
                    tier=Tier.FILTER,
                    skip_reason=SkipReason.EXACT_DUPLICATE,
                    representative_chunk_id=a.chunk_id,
                ),
            ]
        )
        commit_doc(stores, "doc-a", ["Nothing to see here any more."], version=2)
        assert x.states([b.chunk_id])[b.chunk_id].representative_chunk_id is None
        assert x.orphaned_duplicates() == [b.chunk_id]
        assert counts(stores, "entities", "mentions") == (1, 1)  # the copy's own evidence

    def test_chunks_with_hash(self, stores: Stores) -> None:
        [a] = commit_doc(stores, "doc-a", ["same words"])
        [b] = commit_doc(stores, "doc-b", ["same words"])
        [c] = commit_doc(stores, "doc-c", ["other words"])
        x = stores.extraction
        assert a.content_hash == b.content_hash
        assert x.chunks_with_hash([a.content_hash, c.content_hash, "sha256:none"]) == {
            a.content_hash: [a.chunk_id, b.chunk_id],
            c.content_hash: [c.chunk_id],
        }
        delete_doc(stores, "doc-a")
        assert x.chunks_with_hash([a.content_hash]) == {a.content_hash: [b.chunk_id]}

    # --- quarantine and purge -------------------------------------------------------------------------------

    def test_quarantine_round_trip_and_removal_with_its_chunks(self, stores: Stores) -> None:
        [a] = commit_doc(stores, "doc-a", ["alpha"])
        [b] = commit_doc(stores, "doc-b", ["beta"])
        x = stores.extraction
        first = Quarantined((a.chunk_id,), "not JSON after one retry", "{oops", EXTRACTOR)
        second = Quarantined((a.chunk_id, b.chunk_id), "schema", '{"entities": 1}', EXTRACTOR)
        third = Quarantined((b.chunk_id,), "schema", "[]", EXTRACTOR)
        x.quarantine([first, second])
        x.quarantine([third])
        assert x.quarantined() == [third, second, first]  # newest first
        assert x.quarantined(limit=1) == [third]
        delete_doc(stores, "doc-a")
        assert x.quarantined() == [third]  # every reply naming a deleted chunk is gone

    def test_purge_content_removes_cache_entries_of_texts_no_chunk_has(self, stores: Stores) -> None:
        [a] = commit_doc(stores, "doc-a", [PRIYA])
        [b] = commit_doc(stores, "doc-b", ["still here"])
        x = stores.extraction
        x.save([priya(a), result(b)])
        assert x.purge_content([a.content_hash, b.content_hash]) == 0  # both texts are live
        delete_doc(stores, "doc-a")
        assert x.purge_content([a.content_hash, b.content_hash]) == 1
        assert x.cached([key(a), key(b)]) == {key(b): result(b)}
        assert x.purge_content([]) == 0
        [c] = commit_doc(stores, "doc-c", ["gone soon"])
        x.save([result(c)])
        delete_doc(stores, "doc-c")
        assert x.purge_content(None) == 1  # None: every entry whose text no chunk has
        assert x.cached([key(b), key(c)]) == {key(b): result(b)}

    # --- tier 2 -------------------------------------------------------------------------------------------------

    def test_known_names(self, stores: Stores) -> None:
        a, b = commit_doc(stores, "doc-1", ["Routing team notes", "More about Routing and Priya"])
        x = stores.extraction
        x.save(
            [
                result(a, entities=[mention("Routing", "Team")]),
                result(b, entities=[mention("Routing", "Team"), mention("Priya", "Person")]),
            ]
        )
        assert x.known_names() == {"Routing": "Team", "Priya": "Person"}
        assert list(x.known_names(limit=1)) == ["Routing"]  # the most used first

    def test_known_names_of_one_acl_class_are_what_its_chunks_named(self, stores: Stores) -> None:
        """Tier 2 extracts a chunk with the names its own ACL class gave: another class's names and types (a
        restricted record naming a site) must not reach it, and the type a record gave counts only in its class."""
        [hr] = commit_doc(stores, "doc-hr", ["Site record: Brackenfold"], acl=HR)
        [eng] = commit_doc(stores, "doc-eng", ["Brackenfold and Priya"])
        x = stores.extraction
        x.save([result(hr, entities=[mention("Brackenfold", "Site")], tier=Tier.MAPPING)])
        x.save([result(eng, entities=[mention("Brackenfold", "Person"), mention("Priya", "Person")], tier=Tier.NER)])
        assert x.known_names(acl_class_id=HR.acl_class_id) == {"Brackenfold": "Site"}
        assert x.known_names(acl_class_id=ENG.acl_class_id) == {"Brackenfold": "Person", "Priya": "Person"}
        assert x.known_names(acl_class_id="acl_nobody") == {}
        assert x.known_names()["Brackenfold"] == "Site"  # everything: the record's type wins there

    def test_duplicates_are_found_within_one_acl_class(self, stores: Stores) -> None:
        [a] = commit_doc(stores, "doc-a", ["same words"], acl=HR)
        [b] = commit_doc(stores, "doc-b", ["same words"])
        x = stores.extraction
        x.put_minhashes([(MinHashEntry(a.chunk_id, a.content_hash, (1, 2)), ["band1:s"])])
        x.put_minhashes([(MinHashEntry(b.chunk_id, b.content_hash, (1, 2)), ["band1:s"])])
        assert x.chunks_with_hash([a.content_hash], acl_class_id=ENG.acl_class_id) == {a.content_hash: [b.chunk_id]}
        assert x.chunks_with_hash([a.content_hash], acl_class_id=HR.acl_class_id) == {a.content_hash: [a.chunk_id]}
        assert len(x.chunks_with_hash([a.content_hash])[a.content_hash]) == 2
        assert [e.chunk_id for e in x.minhash_candidates(["band1:s"], acl_class_id=HR.acl_class_id)] == [a.chunk_id]
        assert [e.chunk_id for e in x.minhash_candidates(["band1:s"], acl_class_id=ENG.acl_class_id)] == [b.chunk_id]
        assert len(x.minhash_candidates(["band1:s"])) == 2

    # --- ontology -------------------------------------------------------------------------------------------

    def test_ontology_versions_have_one_active(self, stores: Stores) -> None:
        x = stores.extraction
        second = {**ONTOLOGY, "version": "2", "entity_types": {"Person": {}, "Team": {}, "Site": {}, "System": {}}}
        x.save_ontology("1", ONTOLOGY)
        x.save_ontology("2", second)
        assert x.ontology_versions() == ["1", "2"]
        active = x.active_ontology()
        assert active is not None and active["version"] == "2"
        x.save_ontology("1", ONTOLOGY)  # same content again: re-activates, adds nothing
        active = x.active_ontology()
        assert active is not None and active["version"] == "1"
        assert x.ontology_versions() == ["1", "2"]
        x.save_ontology("3", {**ONTOLOGY, "version": "3"}, activate=False)
        active = x.active_ontology()
        assert active is not None and active["version"] == "1"
        assert x.ontology_versions() == ["1", "2", "3"]

    def test_ontology_versions_are_immutable_and_validated(self, stores: Stores) -> None:
        x = stores.extraction
        x.save_ontology("1", ONTOLOGY)
        changed = {**ONTOLOGY, "relation_types": {"LEADS": {"subject": ["Person"], "object": ["Team"]}}}
        with pytest.raises(KgragError) as caught:
            x.save_ontology("1", changed)
        assert caught.value.code is ErrorCode.ONTOLOGY_INVALID
        with pytest.raises(KgragError) as caught:
            x.save_ontology("2", {"version": "2", "entity_types": {}})
        assert caught.value.code is ErrorCode.ONTOLOGY_INVALID
        assert x.ontology_versions() == ["1"]

    # --- runs ---------------------------------------------------------------------------------------------------

    def test_run_round_trip(self, stores: Stores) -> None:
        x = stores.extraction
        preview = RunEstimate(10, 4, 6, 3, 2, 1200, 300, False, 0.0042, "USD", 12.5)
        scope = RerunScope(doc_ids=("doc-1",), sources=("wiki",), contains_any=("LEADS", "leads"))
        run = ExtractionRun("run-1", scope, EXTRACTOR, ONTOLOGY_VERSION, True, "planned", preview, created_at=JAN)
        x.save_run(run)
        assert x.get_run("run-1") == run
        done = dataclasses.replace(
            run, status="completed", receipt=dataclasses.replace(preview, tokens_counted=True),
            done_chunk_ids=["ch_a", "ch_b"], finished_at=FEB,
        )  # fmt: skip
        x.save_run(done)
        assert x.get_run("run-1") == done
        assert x.get_run("run-2") is None
        later = dataclasses.replace(run, run_id="run-3", created_at=FEB)
        x.save_run(later)
        assert [r.run_id for r in x.runs()] == ["run-3", "run-1"]  # newest first
        assert [r.run_id for r in x.runs(limit=1)] == ["run-3"]

    def test_chunks_in_scope(self, stores: Stores) -> None:
        a = commit_doc(stores, "doc-a", ["Priya LEADS routing", "nothing here", "100% of_it"])
        b = commit_doc(stores, "doc-b", ["she leads billing"])
        x = stores.extraction
        assert x.chunks_in_scope(RerunScope()) == a + b
        assert x.chunks_in_scope(RerunScope(doc_ids=("doc-b",))) == b
        assert x.chunks_in_scope(RerunScope(sources=("contract",))) == a + b
        assert x.chunks_in_scope(RerunScope(sources=("elsewhere",))) == []
        assert x.chunks_in_scope(RerunScope(contains_any=("leads",))) == [a[0], b[0]]
        assert x.chunks_in_scope(RerunScope(contains_any=("%",))) == [a[2]]  # a literal, not a wildcard
        assert x.chunks_in_scope(RerunScope(contains_any=("f_i",))) == [a[2]]
        assert x.chunks_in_scope(RerunScope(doc_ids=("doc-a",), chunk_ids=(a[1].chunk_id, b[0].chunk_id))) == [a[1]]
        hidden, chunks = make_document("doc-b", ["she leads billing"], version=2, status=DocumentStatus.DELETED)
        stores.documents.commit_document(hidden, ENG, chunks)
        assert x.chunks_in_scope(RerunScope(contains_any=("leads",))) == [a[0]]

    def test_claims_show_and_find_an_entity_only_by_names_the_caller_may_read(self, stores: Stores) -> None:
        """Two records share an e-mail, so one entity, stored under the restricted record's name (written
        first). The public record's claim must be listed under the public name, and not found by the other."""
        email = ("email", "jb@example.com")
        [secret] = commit_doc(stores, "doc-secret", ["Jordan Blake, jb@example.com"], acl=HR)
        [public] = commit_doc(stores, "doc-public", ["J. Blake (jb@example.com) works from Leipzig"], acl=ENG)
        x = stores.extraction
        x.save([result(secret, entities=[mention("Jordan Blake", "Person", strong_ids=(email,))])])
        office = ClaimItem("J. Blake", "Person", "office", "Leipzig", public.text, 0.9)
        x.save([result(public, entities=[mention("J. Blake", "Person", strong_ids=(email,))], claims=[office])])
        eng = [ENG.acl_class_id]
        [claim] = x.claims(entity="J. Blake", acl_class_ids=eng)
        assert (claim.entity_name, claim.value) == ("J. Blake", "Leipzig")
        assert [c.entity_name for c in x.claims(attribute="office", acl_class_ids=eng)] == ["J. Blake"]
        assert x.claims(entity="Jordan Blake", acl_class_ids=eng) == []
        # Positive control: a reader of the restricted record finds the same claim by the restricted name.
        both = [ENG.acl_class_id, HR.acl_class_id]
        assert [c.claim_id for c in x.claims(entity="Jordan Blake", acl_class_ids=both)] == [claim.claim_id]
        assert [c.claim_id for c in x.claims(entity="Jordan Blake")] == [claim.claim_id]

    def test_entity_ids_are_deterministic(self, stores: Stores) -> None:
        [chunk] = commit_doc(stores, "doc-1", ["LEJ-2 holds 24,500 pallets."])
        stores.extraction.save([result(chunk, claims=[capacity(" lej-2.", "24,500", "24,500 pallets")])])
        [claim] = stores.extraction.claims(entity="LEJ-2")
        assert claim.entity_id == contract_entity_id("Site", "LEJ-2")
