"""Tier 0: boilerplate and low-information chunks, exact and near-duplicates (MinHash + LSH)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from datasketch import MinHashLSH

from kgrag_core.chunking import chunk_document
from kgrag_core.documents import Chunk
from kgrag_core.extraction.model import SkipReason, Tier
from kgrag_core.extraction.records import ChunkExtractionState, MinHashEntry
from kgrag_core.extraction.records_text import render_record
from kgrag_core.extraction.tier0 import (
    MIN_CONTENT_WORDS,
    NUM_PERM,
    band_keys,
    classify_chunk,
    estimated_jaccard,
    find_duplicates,
    minhash_signature,
)
from kgrag_core.ids import chunk_id_for, content_hash

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind"
NEAR_DUPLICATE_PAIRS = [
    ("email-brightwater-outage-apology", "email-fwd-brightwater-outage-apology"),
    ("email-travel-freeze-2024", "email-fwd-travel-freeze-finance"),
    ("email-support-frt-change", "email-support-frt-change-cs"),
    ("wiki-harbor-runbook-picklist-stalls", "ticket-nw-4655-harbor-picklist-stall-chi3"),
    ("meeting-routing-weekly-2024-03-12", "meeting-routing-weekly-2024-03-12-repost"),
]


# --- helpers ---------------------------------------------------------------------------------------


def make_chunk(doc_id: str, text: str, seq: int = 0, occurrence: int = 0, acl_class_id: str = "public") -> Chunk:
    digest = content_hash(text.encode("utf-8"))
    return Chunk(
        chunk_id=chunk_id_for(doc_id, digest, occurrence),
        doc_id=doc_id,
        seq=seq,
        breadcrumb=(),
        start_byte=0,
        end_byte=len(text.encode("utf-8")),
        text=text,
        token_count=len(text.split()),
        content_hash=digest,
        acl_class_id=acl_class_id,
    )


def chunk_corpus() -> list[Chunk]:
    """The corpus chunked as the indexer chunks it (same chunker, same defaults, same IDs)."""
    chunks: list[Chunk] = []
    for line in (CORPUS / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        body = doc["text"].encode("utf-8")
        seen: dict[str, int] = {}
        for span in chunk_document(doc["text"], title=doc["title"]):
            text = body[span.start_byte : span.end_byte].decode("utf-8")
            digest = content_hash(text.encode("utf-8"))
            occurrence = seen.get(digest, 0)
            seen[digest] = occurrence + 1
            chunks.append(
                Chunk(
                    chunk_id_for(doc["id"], digest, occurrence),
                    doc["id"],
                    span.seq,
                    span.breadcrumb,
                    span.start_byte,
                    span.end_byte,
                    text,
                    len(text.split()),
                    digest,
                    "public",
                )
            )
    return chunks


class FakeDedupStore:
    """Stands in for the PostgreSQL extraction store: the four methods tier 0 uses, oldest first."""

    def __init__(self) -> None:
        self.live: list[Chunk] = []  # in the order they were stored: oldest first
        self.minhashes: dict[str, tuple[MinHashEntry, tuple[str, ...]]] = {}
        self.decisions: dict[str, tuple[SkipReason, str]] = {}
        self.put_calls = 0
        self.read_calls = 0

    def add_live(self, chunks: Sequence[Chunk]) -> None:
        self.live.extend(chunks)

    def chunks_with_hash(self, content_hashes: Sequence[str], acl_class_id: str | None = None) -> dict[str, list[str]]:
        self.read_calls += 1
        out: dict[str, list[str]] = {}
        for chunk in self.live:
            if chunk.content_hash in content_hashes and acl_class_id in (None, chunk.acl_class_id):
                out.setdefault(chunk.content_hash, []).append(chunk.chunk_id)
        return out

    def minhash_candidates(
        self, band_keys: Sequence[str], exclude_doc_id: str | None = None, acl_class_id: str | None = None
    ) -> list[MinHashEntry]:
        self.read_calls += 1
        wanted = set(band_keys)
        classes = {c.chunk_id: c.acl_class_id for c in self.live}
        return [
            entry
            for entry, keys in self.minhashes.values()
            if wanted.intersection(keys) and acl_class_id in (None, classes.get(entry.chunk_id))
        ]

    def put_minhashes(self, entries: Sequence[tuple[MinHashEntry, Sequence[str]]]) -> None:
        self.put_calls += 1
        for entry, keys in entries:
            if entry.chunk_id not in self.minhashes:  # an upsert keeps the original age
                self.minhashes[entry.chunk_id] = (entry, tuple(keys))

    def states(self, chunk_ids: Sequence[str]) -> dict[str, ChunkExtractionState]:
        self.read_calls += 1
        out = {}
        for chunk_id in chunk_ids:
            if chunk_id in self.decisions:
                reason, representative = self.decisions[chunk_id]
                out[chunk_id] = ChunkExtractionState(
                    chunk_id, "h", Tier.FILTER, "v", "1", reason.value, representative, False, 0
                )
        return out

    def run(self, chunks: Sequence[Chunk], *, threshold: float = 0.8) -> dict[str, tuple[SkipReason, str]]:
        """What the pipeline does: chunks are committed first, then deduplicated, then results saved."""
        self.add_live([c for c in chunks if c not in self.live])
        found = find_duplicates(chunks, self, threshold=threshold)
        for chunk in chunks:
            if chunk.chunk_id in found:
                self.decisions[chunk.chunk_id] = found[chunk.chunk_id]
            else:
                self.decisions.pop(chunk.chunk_id, None)
        return found


def assert_no_chains(found: dict[str, tuple[SkipReason, str]]) -> None:
    for chunk_id, (_, representative) in found.items():
        assert representative != chunk_id
        assert representative not in found, f"{chunk_id} -> {representative} which is itself a duplicate"


LONG_TEXT = (
    "The Harbor pick-list generator on the CHI-3 site stalled twice during the night shift because the "
    "wave planner locked the replenishment table while the nightly stock reconciliation was still running. "
    "Oliver Grant asked the Warehouse Systems team to move the reconciliation job to 02:00 and to add an "
    "alert in Lighthouse when no pick lists have been generated for fifteen minutes on any active site."
)


# --- classify_chunk --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Best regards,\nTom Becker\nHead of Customer Success\nNorthwind Logistics\n+1 312 555 0100",
        "Thanks,\n\nFatima",
        "Sent from my iPhone",
        "Kind regards,\nAisha\n\nSent from my phone",
        "CONFIDENTIALITY NOTICE: This e-mail and any attachments are confidential and intended solely for the "
        "addressee. If you are not the intended recipient, please notify the sender and delete this message.",
        "You are receiving this email because you subscribed to the Northwind newsletter. "
        "Unsubscribe or manage your preferences at https://news.northwind.example/prefs.",
        "Page 3 of 12",
        "To unsubscribe from these alerts, reply STOP.",
        "--\nMaria",
    ],
)
def test_boilerplate(text: str) -> None:
    assert classify_chunk(text) is SkipReason.BOILERPLATE


@pytest.mark.parametrize(
    "text",
    [
        "# Atlas routing engine — overview",
        "## Modules",
        "From: a@northwind.example\nTo: b@northwind.example\nDate: 2024-01-02\nSubject: Re: meeting tomorrow",
        "See [the page](https://wiki.northwind.example/a/very/long/link/with/many/parts) now",
        "<p>**Noted**</p> — `ok`",
        "",
    ],
)
def test_low_information(text: str) -> None:
    assert classify_chunk(text) is SkipReason.LOW_INFORMATION


@pytest.mark.parametrize(
    "text",
    [
        "Rota changes are in the support calendar from next week.\n\nThanks,\nFatima",
        "Harbor keeps detailed movement history for 24 months.",
        "CONFIDENTIAL: the Osprey target is Baltic Haulage; no offer has been made yet.",
        "From: a@x.example\nSubject: SLA\n\nKestrel's Beacon SLA is 99.9% from January.\n\nBest regards,\nTom",
        render_record("site", {"code": "LEJ-2"}),  # a record is data however short
        "Customers who want fewer ETA e-mails can unsubscribe per shipment in the Beacon portal.",
        LONG_TEXT,
    ],
)
def test_content_is_kept(text: str) -> None:
    assert classify_chunk(text) is None


def test_threshold_is_content_words() -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
    assert classify_chunk(" ".join(words[: MIN_CONTENT_WORDS - 1])) is SkipReason.LOW_INFORMATION
    assert classify_chunk(" ".join(words[:MIN_CONTENT_WORDS])) is None


def test_no_key_fact_chunk_is_filtered() -> None:
    chunks = chunk_corpus()
    facts = [
        fact
        for line in (CORPUS / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        for fact in json.loads(line)["key_facts"]
    ]
    holding = [c for c in chunks if any(fact in c.text for fact in facts)]
    assert len(holding) >= len(facts) // 2  # the check below is not vacuous
    assert [(c.doc_id, c.seq) for c in holding if classify_chunk(c.text) is not None] == []
    # Some chunks are filtered, all of them for a reason the corpus explains (heading-only chunks).
    skipped = {c.chunk_id: classify_chunk(c.text) for c in chunks if classify_chunk(c.text) is not None}
    assert 0 < len(skipped) < len(chunks) // 20
    for chunk in chunks:
        if chunk.chunk_id in skipped:
            assert chunk.text.lstrip().startswith("#"), chunk.text


# --- MinHash ---------------------------------------------------------------------------------------


def test_signature_is_deterministic_and_normalised() -> None:
    signature = minhash_signature(LONG_TEXT)
    assert len(signature) == NUM_PERM
    assert all(isinstance(v, int) and v >= 0 for v in signature)
    assert minhash_signature(LONG_TEXT) == signature
    # Case, whitespace, curly quotes and dashes do not change the shingles.
    variant = LONG_TEXT.upper().replace(" ", "  \n").replace("-", "\u2013")
    assert minhash_signature(variant) == signature
    assert minhash_signature("a completely different text about invoices and billing runs") != signature


def test_estimated_jaccard() -> None:
    signature = minhash_signature(LONG_TEXT)
    assert estimated_jaccard(signature, signature) == 1.0
    edited = LONG_TEXT.replace("fifteen minutes", "twenty minutes")
    assert 0.8 <= estimated_jaccard(signature, minhash_signature(edited)) < 1.0
    unrelated = minhash_signature("Kestrel Pharma signed the renewal on Friday for three more years of storage.")
    assert estimated_jaccard(signature, unrelated) < 0.2


def test_band_keys_follow_datasketch_parameters() -> None:
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    keys = band_keys(minhash_signature(LONG_TEXT))
    assert len(keys) == lsh.b
    assert [k.split(":")[0] for k in keys] == [f"b{i}" for i in range(lsh.b)]
    assert band_keys(minhash_signature(LONG_TEXT)) == keys
    edited = band_keys(minhash_signature(LONG_TEXT.replace("fifteen minutes", "twenty minutes")))
    assert set(edited) & set(keys)  # a close text shares at least one band
    assert set(edited) != set(keys)
    assert not set(band_keys(minhash_signature("nothing in common with the other text at all"))) & set(keys)


# --- find_duplicates -------------------------------------------------------------------------------


def test_exact_duplicates_take_the_oldest_stored_copy() -> None:
    store = FakeDedupStore()
    first = make_chunk("doc-a", LONG_TEXT)
    assert store.run([first]) == {}
    second, third = make_chunk("doc-b", LONG_TEXT), make_chunk("doc-c", LONG_TEXT)
    found = store.run([second, third])
    assert found == {
        second.chunk_id: (SkipReason.EXACT_DUPLICATE, first.chunk_id),
        third.chunk_id: (SkipReason.EXACT_DUPLICATE, first.chunk_id),
    }
    assert_no_chains(found)


def test_exact_duplicates_within_one_batch() -> None:
    store = FakeDedupStore()
    a, b, c = make_chunk("doc-a", LONG_TEXT), make_chunk("doc-b", LONG_TEXT), make_chunk("doc-c", "other words " * 9)
    found = find_duplicates([a, b, c], store)  # nothing stored yet: the first of the batch represents
    assert found == {b.chunk_id: (SkipReason.EXACT_DUPLICATE, a.chunk_id)}
    assert store.put_calls == 1 and set(store.minhashes) == {a.chunk_id, b.chunk_id, c.chunk_id}
    assert store.read_calls <= 3  # reads are batched, not one per chunk


def test_near_duplicates_against_the_store_and_within_the_batch() -> None:
    store = FakeDedupStore()
    original = make_chunk("doc-a", LONG_TEXT)
    store.run([original])
    edited = make_chunk("doc-b", LONG_TEXT.replace("fifteen minutes", "twenty minutes"))
    unrelated = make_chunk("doc-c", "Kestrel Pharma renewed for three years; the tracking fee drops to 2.15 euro.")
    found = store.run([edited, unrelated])
    assert found == {edited.chunk_id: (SkipReason.NEAR_DUPLICATE, original.chunk_id)}

    fresh = FakeDedupStore()
    x = make_chunk("doc-x", LONG_TEXT + " The alert should page the on-call engineer.")
    y = make_chunk("doc-y", LONG_TEXT + " The alert should page the site manager.")
    assert fresh.run([x, y]) == {y.chunk_id: (SkipReason.NEAR_DUPLICATE, x.chunk_id)}


def test_threshold_decides() -> None:
    base = make_chunk("doc-a", LONG_TEXT)
    edited = make_chunk("doc-b", LONG_TEXT.replace("fifteen minutes", "twenty minutes"))
    similarity = estimated_jaccard(minhash_signature(base.text), minhash_signature(edited.text))
    assert find_duplicates([base, edited], FakeDedupStore(), threshold=similarity) != {}
    assert find_duplicates([base, edited], FakeDedupStore(), threshold=min(1.0, similarity + 0.01)) == {}


def test_rerun_is_stable_and_never_self_or_chained() -> None:
    store = FakeDedupStore()
    a = make_chunk("doc-a", LONG_TEXT)
    b = make_chunk("doc-b", LONG_TEXT.replace("fifteen minutes", "twenty minutes"))
    c = make_chunk("doc-c", b.text)  # an exact copy of a near-duplicate
    first = store.run([a, b, c])
    assert first == {
        b.chunk_id: (SkipReason.NEAR_DUPLICATE, a.chunk_id),
        c.chunk_id: (SkipReason.NEAR_DUPLICATE, a.chunk_id),
    }
    # Re-running in another order, or one chunk alone, gives the same answers.
    assert store.run([c, b, a]) == first
    assert store.run([a]) == {}
    assert store.run([c]) == {c.chunk_id: first[c.chunk_id]}
    assert_no_chains(first)


def test_exact_copy_of_a_stored_near_duplicate_points_at_its_original() -> None:
    store = FakeDedupStore()
    a = make_chunk("doc-a", LONG_TEXT)
    b = make_chunk("doc-b", LONG_TEXT.replace("fifteen minutes", "twenty minutes"))
    store.run([a])
    store.run([b])
    c = make_chunk("doc-c", b.text)
    assert store.run([c]) == {c.chunk_id: (SkipReason.NEAR_DUPLICATE, a.chunk_id)}


def test_only_a_chunk_of_the_same_acl_class_stands_in_for_another() -> None:
    """A duplicate takes its representative's items: a restricted copy must not shape a public one's extraction
    (nor the other way round), whether the copy is stored already or in the same batch."""
    store = FakeDedupStore()
    secret = make_chunk("doc-secret", LONG_TEXT, acl_class_id="acl_leadership")
    store.run([secret])
    public = make_chunk("doc-public", LONG_TEXT)
    near = make_chunk("doc-public-2", LONG_TEXT.replace("fifteen minutes", "twenty minutes"))
    assert store.run([public]) == {}  # the exact copy exists, but only in another class
    assert store.run([near]) == {near.chunk_id: (SkipReason.NEAR_DUPLICATE, public.chunk_id)}  # positive control
    restricted_copy = make_chunk("doc-secret-2", LONG_TEXT, acl_class_id="acl_leadership")
    other = make_chunk("doc-other", LONG_TEXT, acl_class_id="acl_finance")
    found = find_duplicates([restricted_copy, other], store)
    assert found == {restricted_copy.chunk_id: (SkipReason.EXACT_DUPLICATE, secret.chunk_id)}  # same class: yes


def test_empty_batch_touches_nothing() -> None:
    store = FakeDedupStore()
    assert find_duplicates([], store) == {}
    assert store.put_calls == 0


def test_corpus_near_duplicate_pairs() -> None:
    chunks = chunk_corpus()
    store = FakeDedupStore()
    found = store.run(chunks)
    assert store.read_calls <= 3
    assert_no_chains(found)
    by_id = {c.chunk_id: c for c in chunks}
    detected_pairs = {(by_id[rep].doc_id, by_id[dup].doc_id) for dup, (_, rep) in found.items()}
    # Detection is per chunk: where the copy only differs in a line, its chunks line up with the original's
    # and are found; a forward that adds a paragraph shifts every chunk boundary and is not.
    assert detected_pairs == {NEAR_DUPLICATE_PAIRS[2], NEAR_DUPLICATE_PAIRS[4]}
    repost = [c for c in chunks if c.doc_id == NEAR_DUPLICATE_PAIRS[4][1]]
    assert all(c.chunk_id in found for c in repost)
    reasons = {found[c.chunk_id][0] for c in repost}
    assert reasons == {SkipReason.EXACT_DUPLICATE, SkipReason.NEAR_DUPLICATE}  # on-call section was edited
    dedup_rate = len(found) / len(chunks)
    assert 0.005 < dedup_rate < 0.02
