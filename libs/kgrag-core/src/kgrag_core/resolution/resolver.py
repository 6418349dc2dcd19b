"""Entity resolution: blocking, pairwise scoring, hard constraints, constrained clustering -> a plan.

The resolver only decides; it changes nothing. The plan's merges are `MergeRecord`s a `ResolutionStore` applies
(and can revert), its review pairs go to the review queue as "possibly same as" links (the entities stay
separate until someone decides), and its refusals say which would-be merges a hard constraint stopped.

Order of authority: overrides (a tracked file of hand decisions) > hard constraints > a shared strong
identifier > the score's decision zones. Incremental use: profiles listed in `existing` are already resolved;
their clusters are taken as given and only pairs with at least one new profile are compared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph.model import DecisionKind, EntityProfile, MergeRecord, PairDecision
from kgrag_core.ids import sha256_hex
from kgrag_core.resolution.blocking import BlockingSettings, Pair, candidate_pairs, ordered
from kgrag_core.resolution.clustering import ConstrainedUnionFind
from kgrag_core.resolution.constraints import (
    AliasIndex,
    Rule,
    hard_stop,
    has_matching_key,
    shares_strong_id,
    strong_id_sets,
)
from kgrag_core.resolution.features import (
    EXACT,
    FeatureWeights,
    attribute_agreement,
    cosine,
    name_similarity,
    neighbour_overlap,
    own_context_directions,
    weighted_score,
)
from kgrag_core.resolution.normalise import name_tokens
from kgrag_core.resolution.scopes import required_classes


@dataclass(frozen=True, slots=True)
class ResolverSettings:
    high: float = 0.85  # at or above: merge automatically
    low: float = 0.55  # below: separate; in between: review
    weights: FeatureWeights = field(default_factory=FeatureWeights)
    max_cluster_size: int = 50
    blocking: BlockingSettings = field(default_factory=BlockingSettings)
    multi_valued_attributes: frozenset[str] = frozenset({"language"})
    # Sentence embeddings (MiniLM) of two short contexts about one thing score about 0.4-0.9, about two
    # different things of one type about 0.1-0.35; the context feature maps [floor, ceiling] onto [0, 1], so
    # its neutral 0.5 sits at 0.35.
    context_floor: float = 0.1
    context_ceiling: float = 0.6

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID, f"need 0 <= low <= high <= 1, got {self.low}, {self.high}"
            )
        if self.max_cluster_size < 2:
            raise KgragError(ErrorCode.CONFIGURATION_INVALID, "max_cluster_size must be at least 2")
        if self.context_ceiling <= self.context_floor:
            raise KgragError(ErrorCode.CONFIGURATION_INVALID, "context_ceiling must be above context_floor")


@dataclass(frozen=True, slots=True)
class Overrides:
    """Hand decisions from `schemas/resolution/overrides.yaml`; they win over every rule and score."""

    must_merge: tuple[Pair, ...] = ()
    must_not_merge: tuple[Pair, ...] = ()


def _parse_pairs(data: Mapping[object, object], key: str) -> tuple[Pair, ...]:
    entries = data.get(key) or []
    if not isinstance(entries, list):
        raise KgragError(ErrorCode.CONFIGURATION_INVALID, f"overrides: {key} must be a list")
    pairs: list[Pair] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, Mapping):
            a, b = entry.get("a"), entry.get("b")
        elif isinstance(entry, list | tuple) and len(entry) == 2:
            a, b = entry
        else:
            a = b = None
        if not isinstance(a, str) or not isinstance(b, str) or not a.strip() or not b.strip() or a == b:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                f"overrides: {key}[{index}] must name two different entity ids",
                hint="write {a: ent_..., b: ent_..., reason: ...} or [ent_..., ent_...]",
            )
        pairs.append(ordered(a.strip(), b.strip()))
    return tuple(sorted(set(pairs)))


def parse_overrides(data: object) -> Overrides:
    """Overrides from the parsed YAML (None or an empty document means none)."""
    if data is None:
        return Overrides()
    if not isinstance(data, Mapping):
        raise KgragError(ErrorCode.CONFIGURATION_INVALID, "overrides: the document must be a mapping")
    unknown = set(data) - {"version", "must_merge", "must_not_merge"}
    if unknown:
        raise KgragError(ErrorCode.CONFIGURATION_INVALID, f"overrides: unknown keys {sorted(map(str, unknown))}")
    overrides = Overrides(_parse_pairs(data, "must_merge"), _parse_pairs(data, "must_not_merge"))
    both = set(overrides.must_merge) & set(overrides.must_not_merge)
    if both:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID, f"overrides: pairs both merged and kept apart: {sorted(both)}"
        )
    return overrides


@dataclass(slots=True)
class ResolutionStats:
    profiles: int = 0
    new_profiles: int = 0
    compared_pairs: int = 0
    blocks: int = 0
    oversized_blocks: dict[str, int] = field(default_factory=dict)
    embedding_probes: int = 0


@dataclass(slots=True)
class ResolutionPlan:
    merges: list[MergeRecord]  # clusters whose members change canonical id
    review: list[PairDecision]  # "possibly same as": left separate, queued for a person
    refused: list[PairDecision]  # would have merged or been reviewed, stopped by a hard or cluster constraint
    canonical: dict[str, str]  # every profile -> its canonical id after the plan
    stats: ResolutionStats


def canonical_member(members: Sequence[str], mentions: Mapping[str, int]) -> str:
    """The member with the most mentions; ties go to the smallest id, so the choice is stable."""
    return min(members, key=lambda member: (-mentions.get(member, 0), member))


class ContextChunks:
    """Each entity's context chunk vectors, and which chunks two entities share (by vector: see
    `own_context_directions`)."""

    def __init__(self, vectors: Mapping[str, Sequence[Sequence[float]]]) -> None:
        self.vectors = vectors
        self._keys = {entity: frozenset(map(tuple, vs)) for entity, vs in vectors.items()}

    def overlap(self, a: str, b: str) -> bool:
        ka, kb = self._keys.get(a), self._keys.get(b)
        return ka is not None and kb is not None and not ka.isdisjoint(kb)


class Resolver:
    def __init__(self, settings: ResolverSettings | None = None) -> None:
        self.settings = settings or ResolverSettings()

    def _context(
        self, a: str, b: str, vectors: Mapping[str, Sequence[float]] | None, chunks: ContextChunks | None = None
    ) -> float | None:
        if not vectors or a not in vectors or b not in vectors:
            return None
        if chunks is not None and chunks.overlap(a, b):
            own = own_context_directions(chunks.vectors[a], chunks.vectors[b])
            if own is None:
                return None  # every chunk of one is a chunk of the other: no context evidence either way
            similarity = cosine(*own)
        else:
            similarity = cosine(vectors[a], vectors[b])
        floor, ceiling = self.settings.context_floor, self.settings.context_ceiling
        return min(1.0, max(0.0, (similarity - floor) / (ceiling - floor)))

    def score_pair(
        self,
        a: EntityProfile,
        b: EntityProfile,
        *,
        alias_index: AliasIndex,
        vectors: Mapping[str, Sequence[float]] | None = None,
        canonical: Mapping[str, str] | None = None,
        chunks: ContextChunks | None = None,
    ) -> tuple[float, dict[str, float | None]]:
        """The weighted score and its features. Pronouns and generic one-word names give no name evidence."""
        canonical = canonical or {}
        name = 0.0
        if has_matching_key(a) and has_matching_key(b):
            name = name_similarity(name_tokens(a.name, a.type), name_tokens(b.name, b.type), person=a.type == "Person")
            if alias_index.alias_link(a.entity_id, b.entity_id) is not None:
                name = EXACT
        features: dict[str, float | None] = {
            "name": name,
            "type": 1.0 if a.type == b.type else 0.0,
            "attributes": attribute_agreement(a, b, self.settings.multi_valued_attributes),
            "neighbours": neighbour_overlap(a, b, canonical),
            "context": self._context(a.entity_id, b.entity_id, vectors, chunks),
        }
        return weighted_score(features, self.settings.weights), features

    def decide(
        self,
        a: EntityProfile,
        b: EntityProfile,
        *,
        alias_index: AliasIndex,
        vectors: Mapping[str, Sequence[float]] | None = None,
        canonical: Mapping[str, str] | None = None,
        overrides: Overrides = Overrides(),
        chunks: ContextChunks | None = None,
    ) -> PairDecision:
        if b.entity_id < a.entity_id:
            a, b = b, a
        score, features = self.score_pair(
            a, b, alias_index=alias_index, vectors=vectors, canonical=canonical, chunks=chunks
        )
        present = tuple((key, round(value, 4)) for key, value in features.items() if value is not None)

        def decision(kind: DecisionKind, rule: str) -> PairDecision:
            return PairDecision(a.entity_id, b.entity_id, kind, round(score, 4), present, rule)

        pair = (a.entity_id, b.entity_id)
        if pair in overrides.must_merge:
            return decision(DecisionKind.MERGE, Rule.OVERRIDE_MERGE)
        if pair in overrides.must_not_merge:
            return decision(DecisionKind.SEPARATE, Rule.OVERRIDE_SEPARATE)
        stop = hard_stop(a, b)
        if stop is not None:
            return decision(DecisionKind.SEPARATE, f"{stop[0]}:{stop[1]}")
        if shares_strong_id(strong_id_sets(a), strong_id_sets(b)):
            return decision(DecisionKind.MERGE, Rule.SHARED_STRONG_ID)
        if not (has_matching_key(a) and has_matching_key(b)):
            return decision(DecisionKind.SEPARATE, Rule.NO_MATCHING_KEY)
        if score >= self.settings.high:
            return decision(DecisionKind.MERGE, Rule.AUTO_MERGE)
        if score >= self.settings.low:
            return decision(DecisionKind.REVIEW, Rule.REVIEW)
        return decision(DecisionKind.SEPARATE, Rule.SEPARATE)

    def _scoped(self, merge: PairDecision, by_id: Mapping[str, EntityProfile]) -> PairDecision:
        """The merge with the ACL classes a reader must hold to be shown it (none for a hand decision)."""
        if merge.rule == Rule.OVERRIDE_MERGE:
            return merge
        needed = required_classes(by_id[merge.a], by_id[merge.b], name_threshold=self.settings.high)
        return replace(merge, requires=needed) if needed else merge

    def resolve(
        self,
        profiles: Sequence[EntityProfile],
        vectors: Mapping[str, Sequence[float]] | None = None,
        existing: Mapping[str, str] | None = None,
        overrides: Overrides | None = None,
        changed: Collection[str] | None = None,
        context_chunks: Mapping[str, Sequence[Sequence[float]]] | None = None,
    ) -> ResolutionPlan:
        """Resolve `profiles` (old and new together); `existing` maps already-resolved ids to canonical ids.

        With `changed`, only pairs with a member in it are scored (an incremental pass: the entities its
        documents name); the others are in `profiles` for their clusters and as blocking's company. With
        `context_chunks` (the chunk vectors each of `vectors` is the mean of), two entities named in the same
        chunks compare only the contexts of the chunks they do not share."""
        chunks = ContextChunks(context_chunks) if context_chunks else None
        existing = dict(existing or {})
        overrides = overrides or Overrides()
        by_id = {profile.entity_id: profile for profile in profiles}
        known = {entity_id for entity_id in existing if entity_id in by_id}
        new_ids = set(by_id) - known if existing else None
        alias_index = AliasIndex(profiles, existing)
        blocking = candidate_pairs(profiles, vectors, self.settings.blocking, new_ids, changed)
        pairs = set(blocking.pairs)
        pairs.update(p for p in overrides.must_merge if p[0] in by_id and p[1] in by_id)
        stats = ResolutionStats(
            profiles=len(by_id),
            new_profiles=len(by_id) if new_ids is None else len(new_ids),
            compared_pairs=len(pairs),
            blocks=blocking.blocks,
            oversized_blocks=dict(sorted(blocking.oversized.items())),
            embedding_probes=blocking.embedding_probes,
        )
        decisions = [
            self.decide(
                by_id[a],
                by_id[b],
                alias_index=alias_index,
                vectors=vectors,
                canonical=existing,
                overrides=overrides,
                chunks=chunks,
            )
            for a, b in sorted(pairs)
        ]
        refused = [
            d for d in decisions if d.kind is DecisionKind.SEPARATE and d.score >= self.settings.low and _is_stop(d)
        ]

        union_find = ConstrainedUnionFind(
            by_id, max_cluster_size=self.settings.max_cluster_size, must_not_merge=overrides.must_not_merge
        )
        for entity_id in sorted(known):
            target = existing[entity_id]
            if target in by_id and target != entity_id:
                refusal = union_find.union(entity_id, target)
                if refusal is not None and refusal[0] is Rule.CLUSTER_OVERRIDE_SEPARATE:
                    refused.append(_refusal(entity_id, target, 1.0, refusal))
        merges = sorted((d for d in decisions if d.kind is DecisionKind.MERGE), key=_merge_order)
        accepted: list[PairDecision] = []
        for merge in merges:
            refusal = union_find.union(merge.a, merge.b, force=merge.rule == Rule.OVERRIDE_MERGE)
            if refusal is None:
                accepted.append(self._scoped(merge, by_id))
            else:
                refused.append(_refusal(merge.a, merge.b, merge.score, refusal, merge.features))

        mentions = {entity_id: profile.mentions for entity_id, profile in by_id.items()}
        canonical: dict[str, str] = {}
        records: list[MergeRecord] = []
        for members in union_find.clusters():
            head = canonical_member(members, mentions)
            canonical.update((member, head) for member in members)
            # The head is never its own member, also when it was filed under another label before.
            moved = tuple(m for m in members if m != head and existing.get(m, m) != head)
            if len(members) > 1 and moved:
                member_set = set(members)
                basis = tuple(d for d in accepted if d.a in member_set)
                decided_by = "override" if any(d.rule == Rule.OVERRIDE_MERGE for d in basis) else "auto"
                merge_id = "mrg_" + sha256_hex("\x1f".join((head, *moved)).encode("utf-8"))[:20]
                records.append(MergeRecord(merge_id, head, moved, basis, decided_by))
        review = sorted(
            (d for d in decisions if d.kind is DecisionKind.REVIEW and canonical[d.a] != canonical[d.b]),
            key=lambda d: (-d.score, d.a, d.b),
        )
        return ResolutionPlan(records, review, refused, canonical, stats)


_RULE_PRIORITY = {Rule.OVERRIDE_MERGE.value: 0, Rule.SHARED_STRONG_ID.value: 1}


def _merge_order(decision: PairDecision) -> tuple[int, float, str, str]:
    return (_RULE_PRIORITY.get(decision.rule, 2), -decision.score, decision.a, decision.b)


def _is_stop(decision: PairDecision) -> bool:
    stops = (Rule.TYPE_MISMATCH.value, Rule.IDENTIFIER_MISMATCH.value, Rule.CONFLICTING_STRONG_IDS.value)
    return decision.rule.startswith(stops) or decision.rule in (
        Rule.OVERRIDE_SEPARATE,
        Rule.NO_MATCHING_KEY,
    )


def _refusal(
    a: str, b: str, score: float, refusal: tuple[Rule, str], features: tuple[tuple[str, float], ...] = ()
) -> PairDecision:
    a, b = ordered(a, b)
    return PairDecision(a, b, DecisionKind.SEPARATE, score, features, f"{refusal[0]}:{refusal[1]}")
