"""Extraction metrics on small hand-made predictions: every count and ratio is worked out by hand."""

from __future__ import annotations

import json

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.extraction_gold import GoldChunk, parse_gold
from kgrag_core.evaluation.extraction_metrics import (
    ItemKind,
    dedup_rate,
    dedup_stats,
    evaluate_extraction,
    normalise_name,
    normalise_value,
)
from kgrag_core.extraction.model import (
    ChunkExtraction,
    ClaimItem,
    EntityMention,
    ExtractionKey,
    Modality,
    Polarity,
    RelationItem,
    SkipReason,
    Tier,
)

KEY = ExtractionKey("hash", "test-extractor", "1")


def _rel(s: str, st: str, r: str, o: str, ot: str, pol: str = "positive", mod: str = "fact") -> dict[str, str]:
    return {"subject": s, "subject_type": st, "relation": r, "object": o, "object_type": ot, "polarity": pol,
            "modality": mod}  # fmt: skip


def _claim(e: str, et: str, a: str, v: str, mod: str = "fact", pol: str = "positive") -> dict[str, str]:
    return {"entity": e, "entity_type": et, "attribute": a, "value": v, "modality": mod, "polarity": pol}


GOLD_ROWS = [
    {
        "id": "g1",
        "doc_id": "d1",
        "anchor": "a1",
        "entities": [{"name": "Atlas", "type": "System"}, {"name": "Priya Raman", "type": "Person"},
                     {"name": "Routing", "type": "Team"}],
        "relations": [_rel("Routing", "Team", "OWNS", "Atlas", "System"),
                      _rel("Priya Raman", "Person", "LEADS", "Routing", "Team")],
        "claims": [_claim("LEJ-2", "Site", "capacity_pallets", "18,000")],
    },
    {
        "id": "g2",
        "doc_id": "d2",
        "anchor": "a2",
        "entities": [{"name": "Beacon", "type": "System"}, {"name": "CockroachDB", "type": "System"}],
        "relations": [_rel("Beacon", "System", "MIGRATES_TO", "CockroachDB", "System", pol="negative", mod="plan")],
        "claims": [_claim("Project Lodestar", "Project", "status", "cancelled"),
                   _claim("Kestrel Pharma", "Organization", "sla", "99.9%")],
    },
    {"id": "g3", "doc_id": "d3", "anchor": "a3", "entities": [{"name": "Lena Fischer", "type": "Person"}]},
]  # fmt: skip


@pytest.fixture
def gold() -> list[GoldChunk]:
    return parse_gold([json.dumps(row) for row in GOLD_ROWS])


def _e(name: str, type_: str) -> EntityMention:
    return EntityMention(name, type_, quote="q", confidence=0.9)


def _r(s: str, r: str, o: str, *, pol: Polarity = Polarity.POSITIVE, mod: Modality = Modality.FACT) -> RelationItem:
    return RelationItem(s, "T", r, o, "T", quote="q", confidence=0.9, polarity=pol, modality=mod)


def _c(e: str, a: str, v: str, *, mod: Modality = Modality.FACT) -> ClaimItem:
    return ClaimItem(e, "T", a, v, quote="q", confidence=0.9, modality=mod)


def _x(chunk: str, tier: Tier, **items: object) -> ChunkExtraction:
    return ChunkExtraction(chunk_id=chunk, key=KEY, tier=tier, **items)  # type: ignore[arg-type]


PREDICTIONS = {
    "g1": [
        _x(
            "c1",
            Tier.NER,
            entities=(_e("priya  raman", "Person"), _e("Atlas", "Team"), _e("Routing", "Team")),
            relations=(_r("Priya Raman", "LEADS", "routing"),),
        ),
        _x(
            "c1",
            Tier.LLM,
            entities=(_e("Atlas", "System"), _e("Priya Raman", "Person"), _e("Atlas", "System")),
            relations=(_r("Routing", "OWNS", "Atlas", mod=Modality.PLAN), _r("Priya Raman", "LEADS", "Routing")),
            claims=(
                _c("LEJ-2", "capacity_pallets", "18000"),
                _c("LEJ-2", "capacity_pallets", "24,500", mod=Modality.PLAN),
            ),
        ),
    ],
    "g2": [
        _x(
            "c2",
            Tier.LLM,
            entities=(_e("Beacon", "System"), _e("CockroachDB", "System"), _e("PostgreSQL", "System")),
            relations=(_r("Beacon", "MIGRATES_TO", "CockroachDB", mod=Modality.PLAN),),
            claims=(_c("Project Lodestar", "status", "Cancelled"), _c("Kestrel Pharma", "sla", "99.90 %")),
        )
    ],
}


def test_normalisation_is_strict_but_ignores_case_spacing_and_punctuation() -> None:
    assert normalise_name("  LEJ-2 ") == normalise_name("lej 2") == "lej 2"
    assert normalise_name("Grace O’Neill") == normalise_name("grace o'neill")
    assert normalise_name("LEJ-2 Leipzig") != normalise_name("LEJ-2")
    assert normalise_name("José Núñez") != normalise_name("Jose Nunez")
    assert normalise_value("18,000") == normalise_value("18000") == "18000"
    assert normalise_value("€2.40") == normalise_value("2.4") == "2.4"
    assert normalise_value("99.5%") == normalise_value("99.50 %") == "99.5"
    assert normalise_value("€182,000") == normalise_value("182000 EUR")
    assert normalise_value("about €182,000") != normalise_value("€182,000")
    assert normalise_value("PostgreSQL 16") == "postgresql 16"
    assert normalise_value("18,000 pallet positions") == "18000 pallet positions"


def test_per_tier_and_pooled_scores(gold: list[GoldChunk]) -> None:
    report = evaluate_extraction(gold, PREDICTIONS)
    ner_e = report.score(Tier.NER, ItemKind.ENTITY)
    assert (ner_e.chunks, ner_e.gold, ner_e.predicted, ner_e.matched) == (1, 3, 3, 2)
    assert ner_e.precision == pytest.approx(2 / 3)
    assert ner_e.recall == pytest.approx(2 / 3)
    ner_r = report.score(Tier.NER, ItemKind.RELATION)
    assert (ner_r.gold, ner_r.predicted, ner_r.matched) == (2, 1, 1)
    assert (ner_r.precision, ner_r.recall, ner_r.modality_accuracy) == (1.0, 0.5, 1.0)
    assert ner_r.f1 == pytest.approx(2 / 3)
    ner_c = report.score(Tier.NER, ItemKind.CLAIM)
    assert (ner_c.gold, ner_c.predicted, ner_c.matched) == (1, 0, 0)
    assert ner_c.precision is None
    assert ner_c.recall == 0.0
    assert ner_c.f1 is None

    llm_e = report.score(Tier.LLM, ItemKind.ENTITY)
    assert (llm_e.chunks, llm_e.gold, llm_e.predicted, llm_e.matched) == (2, 5, 5, 4)
    assert (llm_e.precision, llm_e.recall) == (0.8, 0.8)
    llm_r = report.score(Tier.LLM, ItemKind.RELATION)
    # OWNS matches on its key but has the wrong modality; the negated MIGRATES_TO came back positive.
    assert (llm_r.gold, llm_r.predicted, llm_r.matched, llm_r.modality_matched) == (3, 3, 2, 1)
    assert llm_r.modality_accuracy == 0.5
    llm_c = report.score(Tier.LLM, ItemKind.CLAIM)
    assert (llm_c.gold, llm_c.predicted, llm_c.matched) == (3, 4, 3)
    assert (llm_c.precision, llm_c.recall) == (0.75, 1.0)

    all_e = report.score(None, ItemKind.ENTITY)
    # g3 has no extraction: it counts in the pooled row only, and its entity is missed.
    assert (all_e.chunks, all_e.gold, all_e.predicted, all_e.matched) == (3, 6, 7, 5)
    assert all_e.precision == pytest.approx(5 / 7)
    assert all_e.recall == pytest.approx(5 / 6)
    all_r = report.score(None, ItemKind.RELATION)
    assert (all_r.gold, all_r.predicted, all_r.matched, all_r.modality_matched) == (3, 3, 2, 1)
    all_c = report.score(None, ItemKind.CLAIM)
    assert (all_c.gold, all_c.predicted, all_c.matched) == (3, 4, 3)
    assert [s.tier for s in report.scores] == [Tier.NER] * 3 + [Tier.LLM] * 3 + [None] * 3


def test_markdown_table(gold: list[GoldChunk]) -> None:
    stats = dedup_stats([_x("a", Tier.LLM), _x("b", Tier.FILTER, skip_reason=SkipReason.NEAR_DUPLICATE)])
    table = evaluate_extraction(gold, PREDICTIONS, dedup=stats).to_markdown()
    lines = table.splitlines()
    assert lines[0].startswith("| Tier | Kind | Chunks | Gold | Predicted | Matched | Precision | Recall | F1 |")
    assert "| 2 (ner) | claim | 1 | 1 | 0 | 0 | — | 0.000 | — | — |" in lines
    assert "| 3 (llm) | relation | 2 | 3 | 3 | 2 | 0.667 | 0.667 | 0.667 | 0.500 |" in lines
    assert "| all tiers | entity | 3 | 6 | 7 | 5 | 0.714 | 0.833 | 0.769 | — |" in lines
    assert lines[-1] == "Dedup rate: 1/2 = 0.500 (0 exact, 1 near-duplicate)"


def test_dedup_rate_counts_chunks_that_reuse_a_representative() -> None:
    extractions = [
        _x("a", Tier.LLM),
        _x("b", Tier.FILTER, skip_reason=SkipReason.EXACT_DUPLICATE, representative_chunk_id="a"),
        _x("c", Tier.FILTER, skip_reason=SkipReason.NEAR_DUPLICATE, representative_chunk_id="a"),
        _x("d", Tier.FILTER, skip_reason=SkipReason.BOILERPLATE),
        _x("e", Tier.NER),
    ]
    stats = dedup_stats(extractions)
    assert (stats.chunks, stats.exact_duplicates, stats.near_duplicates, stats.duplicates) == (5, 1, 1, 2)
    assert dedup_rate(extractions) == 0.4
    assert dedup_rate([]) == 0.0


def test_unknown_gold_id_is_refused(gold: list[GoldChunk]) -> None:
    with pytest.raises(KgragError) as err:
        evaluate_extraction(gold, {"nope": [_x("c", Tier.LLM)]})
    assert err.value.code is ErrorCode.MISSING_FIELD
    assert "nope" in err.value.message
