"""The labelled extraction set and the authored tier-3 replies: format, ontology, anchors, quotes, coverage."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.answering.quotes import quote_in_text
from kgrag_core.chunking import chunk_document, estimate_tokens
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.extraction_gold import GoldChunk, check_against_ontology, parse_gold
from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.extraction.ontology import Ontology, parse_ontology
from kgrag_core.indexing.indexer import IndexerSettings

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora" / "northwind"
GOLD_FILE = CORPUS / "extraction" / "gold.jsonl"
REPLIES_FILE = CORPUS / "extraction" / "llm_replies.jsonl"
ONTOLOGY_FILE = ROOT / "schemas" / "ontology" / "ontology.yaml"
# The near-duplicate pairs of corpora/northwind/README.md.
NEAR_DUPLICATE_PAIRS = [
    ("email-brightwater-outage-apology", "email-fwd-brightwater-outage-apology"),
    ("email-travel-freeze-2024", "email-fwd-travel-freeze-finance"),
    ("email-support-frt-change", "email-support-frt-change-cs"),
    ("wiki-harbor-runbook-picklist-stalls", "ticket-nw-4655-harbor-picklist-stall-chi3"),
    ("meeting-routing-weekly-2024-03-12", "meeting-routing-weekly-2024-03-12-repost"),
]


@pytest.fixture(scope="module")
def gold() -> list[GoldChunk]:
    return parse_gold(GOLD_FILE.read_text("utf-8").splitlines())


@pytest.fixture(scope="module")
def ontology() -> Ontology:
    return parse_ontology(yaml.safe_load(ONTOLOGY_FILE.read_text("utf-8")))


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (CORPUS / "documents.jsonl").read_text("utf-8").splitlines() if line]
    return {row["id"]: row for row in rows}


def _chunks(doc: dict[str, Any], count_tokens: Callable[[str], int] = estimate_tokens) -> list[str]:
    """The document cut exactly as the indexer cuts it with its default settings."""
    settings = IndexerSettings()
    body = doc["text"].encode("utf-8")
    spans = chunk_document(
        doc["text"],
        title=doc["title"],
        max_tokens=settings.chunk_max_tokens,
        overlap_tokens=settings.chunk_overlap_tokens,
        count_tokens=count_tokens,
    )
    return [body[s.start_byte : s.end_byte].decode("utf-8") for s in spans]


@pytest.fixture(scope="module")
def chunk_text(gold: list[GoldChunk], documents: dict[str, dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for chunk in gold:
        hits = [text for text in _chunks(documents[chunk.doc_id]) if chunk.anchor in text]
        assert len(hits) == 1, f"{chunk.id}: anchor is inside {len(hits)} chunks of {chunk.doc_id}"
        out[chunk.id] = hits[0]
    return out


@pytest.fixture(scope="module")
def replies() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REPLIES_FILE.read_text("utf-8").splitlines() if line.strip()]


def test_gold_parses_and_is_large_enough(gold: list[GoldChunk]) -> None:
    assert len(gold) >= 25
    assert len({g.id for g in gold}) == len(gold)
    assert all(g.entities for g in gold)
    assert sum(len(g.relations) for g in gold) >= 50
    assert sum(len(g.claims) for g in gold) >= 40


def test_gold_passes_the_ontology_check(gold: list[GoldChunk], ontology: Ontology) -> None:
    assert check_against_ontology(gold, ontology) == []


def test_every_anchor_is_inside_exactly_one_chunk(gold: list[GoldChunk], chunk_text: dict[str, str]) -> None:
    assert set(chunk_text) == {g.id for g in gold}
    # No two gold entries may label the same chunk: each chunk is scored once.
    located = [(g.doc_id, chunk_text[g.id]) for g in gold]
    assert len(set(located)) == len(located)


def test_gold_covers_what_the_issue_asks_for(gold: list[GoldChunk]) -> None:
    docs = {g.doc_id for g in gold}
    assert sum(1 for a, b in NEAR_DUPLICATE_PAIRS if a in docs and b in docs) >= 2
    relations = [r for g in gold for r in g.relations]
    claims = [c for g in gold for c in g.claims]
    modalities = {r.modality for r in relations} | {c.modality for c in claims}
    assert {Modality.FACT, Modality.PLAN, Modality.HYPOTHETICAL} <= modalities
    assert any(r.polarity is Polarity.NEGATIVE for r in relations)
    # The Atlas on-call handover, both sides of it.
    handover = [r for r in relations if r.relation == "ON_CALL_FOR" and r.object == "Atlas"]
    assert any(r.subject == "Kenji Watanabe" and r.valid_from == date(2024, 9, 2) for r in handover)
    assert any(r.subject == "José Núñez" and r.valid_to == date(2024, 9, 2) for r in handover)
    values = {(c.entity, c.attribute, c.value) for c in claims}
    assert {("LEJ-2", "capacity_pallets", "18,000"), ("LEJ-2", "capacity_pallets", "24,500")} <= values
    assert {("Kestrel Pharma", "sla", "99.5%"), ("Kestrel Pharma", "sla", "99.9%")} <= values
    assert {("Engineering", "headcount", v) for v in ("64", "58", "61")} <= values
    assert {("Cobalt Cloud", "monthly_spend", v) for v in ("€182,000", "€141,000")} <= values
    statuses = {c.value for c in claims if c.attribute == "status"}
    assert {"cancelled", "shelved", "draft", "postponed", "rejected"} <= statuses
    assert ("Engineering", "64", Modality.HYPOTHETICAL) in {
        (c.entity, c.value, c.modality) for c in claims if c.attribute == "headcount"
    }
    sources = {g.doc_id.split("-")[0] for g in gold}
    assert {"email", "ticket", "incident", "wiki", "meeting"} <= sources


def test_reply_quotes_are_verbatim_unless_marked_as_paraphrase(
    gold: list[GoldChunk], replies: list[dict[str, Any]], chunk_text: dict[str, str]
) -> None:
    assert {r["gold_id"] for r in replies} == {g.id for g in gold}
    checked = 0
    for row in replies:
        text = chunk_text[row["gold_id"]]
        for kind in ("entities", "relations", "claims"):
            for item in row["reply"][kind]:
                assert item["chunk_id"] == "{chunk_id}"
                found = quote_in_text(item["quote"], text)
                where = f"{row['gold_id']} {kind}: {item['quote'][:60]!r}"
                if item.get("_mistake") == "paraphrase":
                    assert not found, f"marked paraphrase but verbatim: {where}"
                else:
                    assert found, f"quote not in the chunk: {where}"
                checked += 1
    assert checked > 200


def test_anchors_and_quotes_hold_with_the_runtime_tokenizer(
    gold: list[GoldChunk], replies: list[dict[str, Any]], documents: dict[str, dict[str, Any]]
) -> None:
    # The runtime wiring counts tokens with the embedder's tokenizer, not the estimate: chunk boundaries may
    # move, and the labels must still name one chunk that holds every quote.
    count = OnnxMiniLmEmbedder().count_tokens
    by_id = {g.id: g for g in gold}
    for row in replies:
        chunk = by_id[row["gold_id"]]
        hits = [t for t in _chunks(documents[chunk.doc_id], count) if chunk.anchor in t]
        assert len(hits) == 1, f"{chunk.id}: anchor is inside {len(hits)} chunks with the MiniLM tokenizer"
        for kind in ("entities", "relations", "claims"):
            for item in row["reply"][kind]:
                verbatim = quote_in_text(item["quote"], hits[0])
                assert verbatim is (item.get("_mistake") != "paraphrase"), (chunk.id, item["quote"])


def _marked(replies: list[dict[str, Any]], mistake: str) -> list[dict[str, Any]]:
    return [
        item
        for row in replies
        for kind in ("entities", "relations", "claims")
        for item in row["reply"][kind]
        if item.get("_mistake") == mistake
    ]


def test_replies_hold_the_planted_mistakes(replies: list[dict[str, Any]], ontology: Ontology) -> None:
    assert len(_marked(replies, "paraphrase")) >= 3
    disallowed = _marked(replies, "triple_not_allowed")
    assert len(disallowed) >= 2
    assert not any(ontology.allows_triple(r["subject_type"], r["relation"], r["object_type"]) for r in disallowed)
    mechanics = _marked(replies, "conversation_mechanics")
    assert len(mechanics) >= 1
    assert all("asked" in r["quote"] for r in mechanics)
    plan_as_fact = _marked(replies, "plan_as_fact")
    assert len(plan_as_fact) >= 1
    assert all(i["modality"] == "fact" and "plan" in i["quote"] for i in plan_as_fact)
    # Everything not marked is at least well-formed under the ontology, so the planted errors are the only ones
    # a validator must catch on types.
    for row in replies:
        for rel in row["reply"]["relations"]:
            if rel.get("_mistake") != "triple_not_allowed":
                assert ontology.allows_triple(rel["subject_type"], rel["relation"], rel["object_type"]), rel
        for claim in row["reply"]["claims"]:
            assert ontology.allows_attribute(claim["entity_type"], claim["attribute"]), claim


def test_parse_gold_names_the_bad_line() -> None:
    good = json.dumps({"id": "x01", "doc_id": "d", "anchor": "a", "entities": [], "relations": [], "claims": []})
    with pytest.raises(KgragError) as err:
        parse_gold([good, "{not json"])
    assert err.value.code is ErrorCode.MALFORMED_JSON
    assert "line 2" in err.value.message
    missing = json.dumps({"id": "x02", "doc_id": "d", "entities": []})
    with pytest.raises(KgragError) as err:
        parse_gold([good, "", missing])
    assert err.value.code is ErrorCode.MISSING_FIELD
    assert "line 3" in err.value.message
    assert "anchor" in err.value.message
    bad_modality = json.loads(good)
    bad_modality["claims"] = [
        {
            "entity": "A",
            "entity_type": "Site",
            "attribute": "x",
            "value": "1",
            "modality": "rumour",
            "polarity": "positive",
        }
    ]
    with pytest.raises(KgragError) as err:
        parse_gold([json.dumps(bad_modality)])
    assert err.value.code is ErrorCode.MISSING_FIELD
    with pytest.raises(KgragError, match="duplicate id"):
        parse_gold([good, good])


def test_ontology_check_reports_each_kind_of_problem(ontology: Ontology) -> None:
    def rel(relation: str, obj: str) -> dict[str, str]:
        return {"subject": "Priya", "subject_type": "Person", "relation": relation, "object": obj,
                "object_type": "System", "polarity": "positive", "modality": "fact"}  # fmt: skip

    def claim(attribute: str, value: str) -> dict[str, str]:
        return {"entity": "Atlas", "entity_type": "System", "attribute": attribute, "value": value,
                "modality": "fact", "polarity": "positive"}  # fmt: skip

    row = {
        "id": "x99",
        "doc_id": "d",
        "anchor": "a",
        "entities": [
            {"name": "Priya", "type": "Person"},
            {"name": "Atlas", "type": "System"},
            {"name": "Q", "type": "Thing"},
        ],
        "relations": [rel("LEADS", "Atlas"), rel("LIKES", "Atlas"), rel("ON_CALL_FOR", "Beacon")],
        "claims": [claim("headcount", "3"), claim("sla", "high"), claim("colour", "red")],
    }
    problems = check_against_ontology(parse_gold([json.dumps(row)]), ontology)
    text = "\n".join(problems)
    assert "unknown type 'Thing'" in text
    assert "(Person, LEADS, System) is not allowed" in text
    assert "unknown relation 'LIKES'" in text
    assert "'Beacon' (System) is not among the entities" in text
    assert "System may not have 'headcount'" in text
    assert "value is not a percent" in text
    assert "unknown attribute 'colour'" in text
    assert len(problems) == 7


def test_stdlib_validator_passes_and_fails(tmp_path: Path) -> None:
    script = CORPUS / "check_extraction_gold.py"
    ontology_json = tmp_path / "ontology.json"
    ontology_json.write_text(json.dumps(yaml.safe_load(ONTOLOGY_FILE.read_text("utf-8"))), "utf-8")
    ok = subprocess.run(
        [sys.executable, str(script), "--ontology-json", str(ontology_json)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert "OK: no problems found" in ok.stdout
    broken = tmp_path / "gold.jsonl"
    rows = [json.loads(line) for line in GOLD_FILE.read_text("utf-8").splitlines() if line]
    rows[0]["anchor"] = "text that is not in the document"
    rows[1]["relations"][0]["relation"] = "LIKES"
    broken.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    bad = subprocess.run(
        [sys.executable, str(script), "--gold", str(broken), "--ontology-json", str(ontology_json)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1
    assert "anchor occurs 0 times" in bad.stderr
    assert "unknown relation" in bad.stderr
