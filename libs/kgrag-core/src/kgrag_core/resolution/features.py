"""Pairwise features, each in [0, 1] or None when the pair has no such evidence.

A missing feature is not evidence against a match: a pair known only by name is judged on its name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler

from kgrag_core.extraction.identity import normalise_value
from kgrag_core.graph.model import EntityProfile

# Name evidence by shape. One shared token ("Tom" in "Tom Becker", "Brightwater" in "Brightwater Foods") is how
# namesakes merged into the wrong entity in seed 000, so on its own it stays below the auto-merge threshold.
EXACT = 1.0
REORDERED = 0.97  # the same tokens in another order, or the same letters split differently
INITIALS = 0.92  # "M. Chen" and "Maria Chen"
CONTAINED_MANY = 0.9  # "LEJ-2" in "LEJ-2 Leipzig": all tokens of a multi-token name
CONTAINED_ONE = 0.7  # "Brightwater" in "Brightwater Foods": corroboration needed
SURNAME_ONLY = 0.45  # "Maria Chen" and "Wei Chen": same family name, different given names
FUZZY_FLOOR = 0.5  # closeness below this is no name evidence at all


@dataclass(frozen=True, slots=True)
class FeatureWeights:
    """How far each corroborating feature can move the name evidence, up (feature 1.0) or down (0.0)."""

    attributes: float = 0.15
    neighbours: float = 0.10
    context: float = 0.15


def _compatible_given(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return long.startswith(short)  # equal, an initial ("m" / "maria") or a short form ("tom" / "tomasz")


def name_similarity(a: Sequence[str], b: Sequence[str], *, person: bool = False) -> float:
    """Similarity of two normalised token sequences."""
    if not a or not b:
        return 0.0
    if list(a) == list(b):
        return EXACT
    if sorted(a) == sorted(b) or "".join(a) == "".join(b):
        return REORDERED  # "Chen, Maria"; "Al-Sayed" / "Alsayed"
    if person and len(a) == len(b) >= 2 and a[-1] == b[-1]:
        compatible = all(_compatible_given(x, y) for x, y in zip(a[:-1], b[:-1], strict=True))
        return INITIALS if compatible else SURNAME_ONLY
    small, large = sorted((set(a), set(b)), key=len)
    if small < large:
        return CONTAINED_ONE if len(small) == 1 else CONTAINED_MANY
    left, right = " ".join(a), " ".join(b)
    # Spelling variants ("Al-Sayed" / "Alsayed", "Müller" / "Mueller") score above 0.9 on both measures; two
    # names sharing a word ("Atlas Freight" / "Ferro Freight") around 0.6, which must not reach review.
    closeness = min(fuzz.token_sort_ratio(left, right) / 100.0, JaroWinkler.similarity(left, right))
    return max(0.0, (closeness - FUZZY_FLOOR) / (1.0 - FUZZY_FLOOR))


def attribute_agreement(a: EntityProfile, b: EntityProfile, multi_valued: frozenset[str]) -> float | None:
    """Share of the attributes both have whose values agree; a multi-valued one agrees on any common value."""
    values_a: dict[str, set[str]] = {}
    values_b: dict[str, set[str]] = {}
    for target, profile in ((values_a, a), (values_b, b)):
        for attribute, value in profile.attributes:
            target.setdefault(attribute, set()).add(normalise_value(value))
    common = values_a.keys() & values_b.keys()
    if not common:
        return None
    agree = 0
    for attribute in common:
        shared = values_a[attribute] & values_b[attribute]
        if (attribute in multi_valued and shared) or (shared and values_a[attribute] == values_b[attribute]):
            agree += 1
    return agree / len(common)


def neighbour_overlap(a: EntityProfile, b: EntityProfile, canonical: Mapping[str, str]) -> float | None:
    """Overlap coefficient of the two neighbourhoods, neighbours read through their canonical ids.

    Only positive evidence: neighbours are mention-level ids until they are resolved themselves, so two
    duplicates often know the same neighbour under different ids, and no overlap says little."""
    left = {canonical.get(n, n) for n in a.neighbours}
    right = {canonical.get(n, n) for n in b.neighbours}
    if not left or not right:
        return None
    shared = len(left & right)
    return shared / min(len(left), len(right)) if shared else None


def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    # numpy: a pass compares thousands of 384-dimensional pairs; in Python this was a fifth of its time.
    a, b = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"cosine of vectors of different shapes {a.shape} and {b.shape}")
    norm = math.sqrt(float(a @ a)) * math.sqrt(float(b @ b))
    return 0.0 if norm == 0.0 else float(a @ b) / norm


def mean_direction(vectors: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """The unit vector along the sum of `vectors` (the zero vector when they cancel out)."""
    if not vectors:
        raise ValueError("mean_direction needs at least one vector")
    # numpy: a pass averages a few chunk vectors for each of hundreds of entities; ragged input raises.
    sums = np.asarray(vectors, dtype=np.float64).sum(axis=0)
    norm = float(np.sqrt(sums @ sums))
    return tuple((sums / norm).tolist()) if norm else tuple(sums.tolist())


def own_context_directions(
    a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The two entities' context directions over the chunks only one of them is named in; None when either has
    no chunk of its own.

    Two entities named in one chunk get that chunk's vector: the cosine of their contexts then says they were
    mentioned together, not that they are one thing (two siblings of one biography scored 1.0). A chunk's
    vector stands for the chunk (the same text gives the same cached vector), so equal vectors are shared ones.
    """
    a_keys, b_keys = {tuple(v) for v in a}, {tuple(v) for v in b}
    only_a = [v for v in a if tuple(v) not in b_keys]
    only_b = [v for v in b if tuple(v) not in a_keys]
    if not only_a or not only_b:
        return None
    return mean_direction(only_a), mean_direction(only_b)


def weighted_score(features: Mapping[str, float | None], weights: FeatureWeights) -> float:
    """The name evidence moved by each corroborating feature present, clipped to [0, 1].

    A feature at 0.5 is neutral; at 1.0 it adds its weight, at 0.0 it subtracts it. This keeps the name as the
    base (a pair is only a candidate because of it) and lets agreeing attributes, shared neighbours and similar
    contexts lift a short name ("Brightwater") over the threshold, or a conflicting role pull a namesake down.
    """
    score = features.get("name") or 0.0
    for feature, weight in (
        ("attributes", weights.attributes),
        ("neighbours", weights.neighbours),
        ("context", weights.context),
    ):
        value = features.get(feature)
        if value is not None:
            score += weight * (2.0 * min(1.0, max(0.0, value)) - 1.0)
    return min(1.0, max(0.0, score))
