"""Resolution quality against gold clusters: pairwise precision/recall/F1, purity and inverse purity.

Pairwise scores count unordered pairs of entities put together: precision punishes over-merging (one wrong
merge of two big clusters costs many pairs), recall punishes missed duplicates. Purity is the share of entities
whose predicted cluster's majority gold label is theirs; inverse purity the same with the roles swapped.
Also parses the labelled profile set (`corpora/northwind/resolution/entities.jsonl`) from its lines.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph.model import EntityProfile


@dataclass(frozen=True, slots=True)
class ResolutionScores:
    entities: int
    gold_pairs: int
    predicted_pairs: int
    true_pairs: int
    precision: float
    recall: float
    f1: float
    purity: float
    inverse_purity: float


def _pairs(size: int) -> int:
    return size * (size - 1) // 2


def _groups(labels: Mapping[str, str]) -> dict[str, set[str]]:
    groups: dict[str, set[str]] = defaultdict(set)
    for entity_id, label in labels.items():
        groups[label].add(entity_id)
    return groups


def _majority_share(clusters: Iterable[set[str]], labels: Mapping[str, str], total: int) -> float:
    if not total:
        return 1.0
    hits = sum(Counter(labels[e] for e in cluster).most_common(1)[0][1] for cluster in clusters if cluster)
    return hits / total


def score_resolution(predicted: Mapping[str, str], gold: Mapping[str, str]) -> ResolutionScores:
    """`predicted` and `gold` map each entity id to a cluster label (a canonical id, a gold cluster name)."""
    if set(predicted) != set(gold):
        missing = sorted(set(gold) ^ set(predicted))[:5]
        raise KgragError(ErrorCode.MISSING_FIELD, f"predicted and gold label different entities, e.g. {missing}")
    overlap = Counter((predicted[e], gold[e]) for e in gold)
    true_pairs = sum(_pairs(n) for n in overlap.values())
    predicted_pairs = sum(_pairs(len(c)) for c in _groups(predicted).values())
    gold_pairs = sum(_pairs(len(c)) for c in _groups(gold).values())
    precision = true_pairs / predicted_pairs if predicted_pairs else 1.0
    recall = true_pairs / gold_pairs if gold_pairs else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return ResolutionScores(
        entities=len(gold),
        gold_pairs=gold_pairs,
        predicted_pairs=predicted_pairs,
        true_pairs=true_pairs,
        precision=precision,
        recall=recall,
        f1=f1,
        purity=_majority_share(_groups(predicted).values(), gold, len(gold)),
        inverse_purity=_majority_share(_groups(gold).values(), predicted, len(gold)),
    )


def scores_table(rows: Sequence[tuple[str, ResolutionScores]]) -> str:
    """A Markdown table, one row per configuration."""
    lines = [
        "| Configuration | Entities | Gold pairs | Predicted pairs | Precision | Recall | F1 | Purity "
        "| Inverse purity |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, s in rows:
        lines.append(
            f"| {label} | {s.entities} | {s.gold_pairs} | {s.predicted_pairs} | {s.precision:.3f} | {s.recall:.3f} "
            f"| {s.f1:.3f} | {s.purity:.3f} | {s.inverse_purity:.3f} |"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class LabelledProfile:
    profile: EntityProfile
    gold_cluster: str


def _pairs_field(row: Mapping[str, Any], key: str, line_no: int) -> tuple[tuple[str, str], ...]:
    value = row.get(key) or {}
    if isinstance(value, Mapping):
        items = [(str(k), str(v)) for k, v in value.items()]
    elif isinstance(value, list) and all(isinstance(i, list) and len(i) == 2 for i in value):
        items = [(str(k), str(v)) for k, v in value]
    else:
        raise KgragError(ErrorCode.MALFORMED_JSON, f"line {line_no}: {key} must be an object or a list of pairs")
    return tuple(items)


def parse_labelled_profiles(lines: Iterable[str]) -> list[LabelledProfile]:
    """One JSON object per line: entity_id, type, name, gold_cluster required; aliases, strong_ids,
    attributes, neighbours, context, mentions optional."""
    out: list[LabelledProfile] = []
    seen: set[str] = set()
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise KgragError(ErrorCode.MALFORMED_JSON, f"line {line_no}: {exc.msg}") from exc
        if not isinstance(row, dict):
            raise KgragError(ErrorCode.MALFORMED_JSON, f"line {line_no}: not a JSON object")
        for key in ("entity_id", "type", "name", "gold_cluster"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise KgragError(ErrorCode.MISSING_FIELD, f"line {line_no}: {key} is required")
        if row["entity_id"] in seen:
            raise KgragError(ErrorCode.MALFORMED_JSON, f"line {line_no}: duplicate entity_id {row['entity_id']}")
        seen.add(row["entity_id"])
        profile = EntityProfile(
            entity_id=row["entity_id"],
            type=row["type"],
            name=row["name"],
            aliases=tuple(str(a) for a in row.get("aliases") or ()),
            strong_ids=_pairs_field(row, "strong_ids", line_no),
            attributes=_pairs_field(row, "attributes", line_no),
            neighbours=tuple(str(n) for n in row.get("neighbours") or ()),
            context=str(row.get("context") or ""),
            mentions=int(row.get("mentions") or 1),
        )
        out.append(LabelledProfile(profile, row["gold_cluster"]))
    return out
