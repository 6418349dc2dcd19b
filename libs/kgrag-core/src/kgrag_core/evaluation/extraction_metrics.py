"""Extraction precision/recall against the labelled set, per tier and per kind, and the dedup rate.

Matching is exact on normalised keys, per gold chunk, with set semantics (an item predicted twice for one chunk
counts once):

* entity: (name, type)
* relation: (subject, relation, object, polarity); modality is scored separately, as accuracy over matches
* claim: (entity, attribute, value, modality, polarity)

Names are normalised by Unicode NFKC, casefold, punctuation to spaces and collapsed whitespace, nothing more:
"LEJ-2" equals "lej 2" but not "LEJ-2 Leipzig", and "José" does not equal "Jose". Values that are a single
number (optionally with a currency sign or code, or a percent sign) compare by their numeric value, so
"18,000" == "18000" and "€2.40" == "2.4"; the currency and the percent sign are not compared (the attribute
already fixes the unit). Other values compare like names after thousands separators are removed, so
"about €182,000" does not equal "€182,000". Dates compare as written (ISO in the gold set).

Tier attribution: every predicted item counts for the tier of the ChunkExtraction it came from. A tier's row
covers only the gold chunks that tier produced an extraction for, so its recall is "of what it saw"; the
"all tiers" row pools every tier's items per chunk and covers every gold chunk.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from kgrag_core.answering.quotes import normalise_for_quote
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.extraction_gold import GoldChunk
from kgrag_core.extraction.model import ChunkExtraction, Modality, SkipReason, Tier


class ItemKind(StrEnum):
    ENTITY = "entity"
    RELATION = "relation"
    CLAIM = "claim"


_PUNCT = re.compile(r"[^\w\s]|_")
_SPACE = re.compile(r"\s+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMERIC = re.compile(r"(?:[€$£]|EUR|USD|GBP)?\s*(\d+(?:\.\d+)?)\s*(?:%|EUR|USD|GBP)?", re.IGNORECASE)


def normalise_name(text: str) -> str:
    folded = normalise_for_quote(unicodedata.normalize("NFKC", text)).casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", folded)).strip()


def normalise_value(text: str) -> str:
    plain = _THOUSANDS.sub("", unicodedata.normalize("NFKC", text).strip())
    match = _NUMERIC.fullmatch(plain)
    if match is not None:
        return format(Decimal(match.group(1)).normalize(), "f")
    return normalise_name(plain)


_Key = tuple[str, ...]


def _entity_keys(extraction: ChunkExtraction) -> set[_Key]:
    return {(normalise_name(e.name), e.type) for e in extraction.entities}


def _relation_keys(extraction: ChunkExtraction) -> dict[_Key, set[Modality]]:
    out: dict[_Key, set[Modality]] = {}
    for r in extraction.relations:
        key = (normalise_name(r.subject), r.relation, normalise_name(r.object), r.polarity.value)
        out.setdefault(key, set()).add(r.modality)
    return out


def _claim_keys(extraction: ChunkExtraction) -> set[_Key]:
    return {
        (normalise_name(c.entity), c.attribute, normalise_value(c.value), c.modality.value, c.polarity.value)
        for c in extraction.claims
    }


@dataclass(frozen=True, slots=True)
class _GoldKeys:
    entities: set[_Key]
    relations: dict[_Key, set[Modality]]
    claims: set[_Key]


def _gold_keys(chunk: GoldChunk) -> _GoldKeys:
    relations: dict[_Key, set[Modality]] = {}
    for r in chunk.relations:
        key = (normalise_name(r.subject), r.relation, normalise_name(r.object), r.polarity.value)
        relations.setdefault(key, set()).add(r.modality)
    return _GoldKeys(
        entities={(normalise_name(e.name), e.type) for e in chunk.entities},
        relations=relations,
        claims={
            (normalise_name(c.entity), c.attribute, normalise_value(c.value), c.modality.value, c.polarity.value)
            for c in chunk.claims
        },
    )


@dataclass(frozen=True, slots=True)
class Score:
    """One row: `tier` None means all tiers pooled."""

    tier: Tier | None
    kind: ItemKind
    chunks: int
    gold: int
    predicted: int
    matched: int
    modality_matched: int | None = None  # relations only: matches whose modality also agrees

    @property
    def precision(self) -> float | None:
        return self.matched / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.gold if self.gold else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def modality_accuracy(self) -> float | None:
        if self.modality_matched is None or not self.matched:
            return None
        return self.modality_matched / self.matched


@dataclass(frozen=True, slots=True)
class DedupStats:
    chunks: int
    exact_duplicates: int
    near_duplicates: int

    @property
    def duplicates(self) -> int:
        return self.exact_duplicates + self.near_duplicates

    @property
    def rate(self) -> float:
        return self.duplicates / self.chunks if self.chunks else 0.0


def dedup_stats(extractions: Iterable[ChunkExtraction]) -> DedupStats:
    chunks = exact = near = 0
    for extraction in extractions:
        chunks += 1
        if extraction.skip_reason is SkipReason.EXACT_DUPLICATE:
            exact += 1
        elif extraction.skip_reason is SkipReason.NEAR_DUPLICATE or extraction.representative_chunk_id is not None:
            near += 1
    return DedupStats(chunks, exact, near)


def dedup_rate(extractions: Iterable[ChunkExtraction]) -> float:
    """Duplicates (exact or near, i.e. chunks that reuse a representative's extraction) / chunks."""
    return dedup_stats(extractions).rate


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _tier_label(tier: Tier | None) -> str:
    return "all tiers" if tier is None else f"{int(tier)} ({tier.name.lower()})"


@dataclass(frozen=True, slots=True)
class ExtractionReport:
    scores: tuple[Score, ...]
    dedup: DedupStats | None = None

    def score(self, tier: Tier | None, kind: ItemKind) -> Score:
        for s in self.scores:
            if s.tier == tier and s.kind is kind:
                return s
        raise KeyError((tier, kind))

    def to_markdown(self) -> str:
        lines = [
            "| Tier | Kind | Chunks | Gold | Predicted | Matched | Precision | Recall | F1 | Modality acc. |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for s in self.scores:
            lines.append(
                f"| {_tier_label(s.tier)} | {s.kind.value} | {s.chunks} | {s.gold} | {s.predicted} | {s.matched} "
                f"| {_fmt(s.precision)} | {_fmt(s.recall)} | {_fmt(s.f1)} | {_fmt(s.modality_accuracy)} |"
            )
        if self.dedup is not None:
            d = self.dedup
            lines.append("")
            lines.append(
                f"Dedup rate: {d.duplicates}/{d.chunks} = {d.rate:.3f} "
                f"({d.exact_duplicates} exact, {d.near_duplicates} near-duplicate)"
            )
        return "\n".join(lines) + "\n"


@dataclass(slots=True)
class _Tally:
    chunks: int = 0
    gold: int = 0
    predicted: int = 0
    matched: int = 0
    modality_matched: int = 0


def _add(
    tallies: dict[ItemKind, _Tally],
    gold: _GoldKeys,
    entities: set[_Key],
    relations: dict[_Key, set[Modality]],
    claims: set[_Key],
) -> None:
    for kind, gold_set, predicted_set in (
        (ItemKind.ENTITY, gold.entities, entities),
        (ItemKind.RELATION, set(gold.relations), set(relations)),
        (ItemKind.CLAIM, gold.claims, claims),
    ):
        tally = tallies[kind]
        tally.chunks += 1
        tally.gold += len(gold_set)
        tally.predicted += len(predicted_set)
        tally.matched += len(gold_set & predicted_set)
    relation_tally = tallies[ItemKind.RELATION]
    relation_tally.modality_matched += sum(1 for key, modes in relations.items() if gold.relations.get(key) == modes)


def _scores(tier: Tier | None, tallies: dict[ItemKind, _Tally]) -> list[Score]:
    return [
        Score(
            tier,
            kind,
            t.chunks,
            t.gold,
            t.predicted,
            t.matched,
            t.modality_matched if kind is ItemKind.RELATION else None,
        )
        for kind, t in tallies.items()
    ]


def evaluate_extraction(
    gold: Sequence[GoldChunk],
    predictions: Mapping[str, Sequence[ChunkExtraction]],
    *,
    dedup: DedupStats | None = None,
) -> ExtractionReport:
    """Score `predictions` (gold chunk id -> the extractions made for that chunk, any tiers) against `gold`.

    A gold chunk with no extraction counts in the "all tiers" row only (its gold items are all missed).
    Raises MISSING_FIELD if a prediction names a gold id the set does not hold.
    """
    by_id = {g.id: g for g in gold}
    unknown = sorted(set(predictions) - set(by_id))
    if unknown:
        raise KgragError(ErrorCode.MISSING_FIELD, f"predictions for gold ids not in the gold set: {unknown}")
    per_tier: dict[Tier, dict[ItemKind, _Tally]] = {}
    pooled = {kind: _Tally() for kind in ItemKind}
    for chunk in gold:
        keys = _gold_keys(chunk)
        extractions = predictions.get(chunk.id, ())
        entities: set[_Key] = set()
        relations: dict[_Key, set[Modality]] = {}
        claims: set[_Key] = set()
        for tier in sorted({e.tier for e in extractions}):
            of_tier = [e for e in extractions if e.tier is tier]
            tier_entities = set().union(*(_entity_keys(e) for e in of_tier))
            tier_relations: dict[_Key, set[Modality]] = {}
            for e in of_tier:
                for key, modes in _relation_keys(e).items():
                    tier_relations.setdefault(key, set()).update(modes)
            tier_claims = set().union(*(_claim_keys(e) for e in of_tier))
            tallies = per_tier.setdefault(tier, {kind: _Tally() for kind in ItemKind})
            _add(tallies, keys, tier_entities, tier_relations, tier_claims)
            entities |= tier_entities
            for key, modes in tier_relations.items():
                relations.setdefault(key, set()).update(modes)
            claims |= tier_claims
        _add(pooled, keys, entities, relations, claims)
    scores: list[Score] = []
    for tier in sorted(per_tier):
        scores.extend(_scores(tier, per_tier[tier]))
    scores.extend(_scores(None, pooled))
    return ExtractionReport(tuple(scores), dedup)
