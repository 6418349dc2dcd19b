"""Candidate pairs from several blocking keys, never from all pairs.

Keys (all within one entity type, since different types never merge): each token of a matching key, the full
matching key, its phonetic key, each strong identifier, and embedding nearest neighbours of name + context.
Pairs are only formed inside a block; a block larger than `max_block_size` is skipped and reported (a token like
"chen" or "site" shared by thousands says nothing, and comparing inside it is what all-pairs costs).

Embedding neighbours use random-hyperplane LSH (SimHash) tables: vectors that share a bucket in any table are
candidates, and each profile keeps its top-k by cosine among them. Only bucket-mates are ever compared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import numpy.typing as npt

from kgrag_core.graph.model import EntityProfile
from kgrag_core.resolution.constraints import matching_keys, strong_id_sets
from kgrag_core.resolution.normalise import COMMON_NOUNS, phonetic_key

Pair = tuple[str, str]


def ordered(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True, slots=True)
class BlockingSettings:
    max_block_size: int = 50
    embedding_top_k: int = 5
    embedding_min_cosine: float = 0.55
    lsh_tables: int = 8
    lsh_bits: int = 10
    lsh_seed: int = 20240605
    min_token_length: int = 2  # initials ("m" of "M. Chen") block nothing on their own


@dataclass(slots=True)
class Blocking:
    pairs: set[Pair] = field(default_factory=set)
    blocks: int = 0
    oversized: dict[str, int] = field(default_factory=dict)  # skipped block key -> its size
    embedding_probes: int = 0  # cosine computations spent finding neighbours


def block_keys(profile: EntityProfile, settings: BlockingSettings = BlockingSettings()) -> set[str]:
    """The blocking keys of one profile. Pronouns and generic one-word names contribute none."""
    name_key, alias_keys = matching_keys(profile)
    keys: set[str] = set()
    forms = {key for key in (name_key, *alias_keys) if key}
    for form in forms:
        keys.add(f"name:{form}")
        keys.add(f"sound:{phonetic_key(form, profile.type)}")
        for token in form.split():
            if len(token) >= settings.min_token_length and token not in COMMON_NOUNS:
                keys.add(f"token:{token}")
    for kind, values in strong_id_sets(profile).items():
        keys.update(f"id:{kind}:{value}" for value in values)
    return {f"{profile.type}|{key}" for key in keys}


def _accept(pair: Pair, new_ids: Collection[str] | None, changed: Collection[str] | None = None) -> bool:
    """A pair with a member not yet resolved and, when `changed` is given, a member in it."""
    return (new_ids is None or pair[0] in new_ids or pair[1] in new_ids) and (
        changed is None or pair[0] in changed or pair[1] in changed
    )


def _key_blocks(
    profiles: Iterable[EntityProfile],
    settings: BlockingSettings,
    new_ids: Collection[str] | None,
    out: Blocking,
    changed: Collection[str] | None = None,
) -> None:
    members: dict[str, list[str]] = defaultdict(list)
    for profile in profiles:
        for key in block_keys(profile, settings):
            members[key].append(profile.entity_id)
    for key, ids in members.items():
        if len(ids) < 2:
            continue
        if len(ids) > settings.max_block_size:
            out.oversized[key] = len(ids)
            continue
        out.blocks += 1
        for a, b in combinations(ids, 2):
            pair = ordered(a, b)
            if a != b and _accept(pair, new_ids, changed):
                out.pairs.add(pair)


def _embedding_neighbours(
    profiles: Sequence[EntityProfile],
    vectors: Mapping[str, Sequence[float]],
    settings: BlockingSettings,
    new_ids: Collection[str] | None,
    out: Blocking,
    changed: Collection[str] | None = None,
) -> None:
    with_vectors = [p for p in profiles if p.entity_id in vectors]
    if len(with_vectors) < 2:
        return
    matrix: npt.NDArray[np.float64] = np.asarray([vectors[p.entity_id] for p in with_vectors], dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0.0, 1.0, norms)
    planes = np.random.default_rng(settings.lsh_seed).standard_normal(
        (settings.lsh_tables, settings.lsh_bits, matrix.shape[1])
    )
    weights = 1 << np.arange(settings.lsh_bits)
    # signatures[t, i]: the bucket of vector i in table t (the sign pattern against that table's hyperplanes)
    signatures = np.einsum("tbd,nd->tnb", planes, matrix) > 0.0
    buckets = (signatures * weights).sum(axis=2)
    mates: dict[int, set[int]] = defaultdict(set)
    for table in range(settings.lsh_tables):
        grouped: dict[tuple[str, int], list[int]] = defaultdict(list)
        for index, bucket in enumerate(buckets[table].tolist()):
            grouped[(with_vectors[index].type, bucket)].append(index)
        for (entity_type, bucket), indices in grouped.items():
            if len(indices) < 2:
                continue
            if len(indices) > settings.max_block_size:
                out.oversized[f"{entity_type}|embedding:{table}:{bucket}"] = len(indices)
                continue
            out.blocks += 1
            for index in indices:
                mates[index].update(i for i in indices if i != index)
    for index, candidates in mates.items():
        ordered_candidates = sorted(candidates)
        similarities = matrix[ordered_candidates] @ matrix[index]
        out.embedding_probes += len(ordered_candidates)
        ranked = sorted(
            zip(similarities.tolist(), ordered_candidates, strict=True), key=lambda item: (-item[0], item[1])
        )
        for similarity, other in ranked[: settings.embedding_top_k]:
            if similarity < settings.embedding_min_cosine:
                break
            pair = ordered(with_vectors[index].entity_id, with_vectors[other].entity_id)
            if _accept(pair, new_ids, changed):
                out.pairs.add(pair)


def candidate_pairs(
    profiles: Sequence[EntityProfile],
    vectors: Mapping[str, Sequence[float]] | None = None,
    settings: BlockingSettings = BlockingSettings(),
    new_ids: Collection[str] | None = None,
    changed: Collection[str] | None = None,
) -> Blocking:
    """Pairs to compare. With `new_ids`, only pairs with at least one new member (incremental resolution);
    with `changed`, only pairs with at least one member in it (what an incremental pass's documents changed:
    a pair of two unchanged profiles was decided when the later of them last changed)."""
    out = Blocking()
    _key_blocks(profiles, settings, new_ids, out, changed)
    if vectors:
        _embedding_neighbours(profiles, vectors, settings, new_ids, out, changed)
    return out
