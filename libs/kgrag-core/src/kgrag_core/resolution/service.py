"""The entity-resolution use case: read profiles, resolve, apply merges, queue reviews, relabel hubs.

After documents change, a pass reads only what they could affect (`run(doc_ids)`): their entities, every
entity of the same type sharing a name token (one held by at most a block's worth of entities: blocking
skips a larger block) or a strong identifier with them, and those entities' clusters; it scores only pairs
with a member the documents name (a pair of two unchanged entities was scored when the later of them last
changed) and looks for namesakes only among those, so its cost follows the change, not the graph. A full
pass (`run()`, the periodic one: `kgrag entities resolve-pass`) reads every profile and catches what the
incremental scope cannot see, such as a phonetic or embedding-only match, or a pair whose neighbours
merged. In both, clusters already merged keep their members (the resolver compares only pairs that involve
an entity not yet in a cluster).

An entity's context vector is the normalised mean of the vectors of the chunks it is mentioned in (the
chunks its profile quotes), which the indexer computed and cached when it indexed them: a pass calls no
model for them, however often an entity's mentions change. Only an entity none of whose chunks has a
cached vector (rows indexed before migration 0014) has its quoted context embedded by the model; those
vectors are kept in this process only, for the profiles of the latest pass (a profile's context quotes its
documents, so a stored vector would outlive a compliance deletion of them), and an unchanged profile is
never embedded twice while the process runs. The chunk vectors go with their chunks: a deleted document's
are purged from the embedding cache with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kgrag_core.graph.model import DecisionKind, EntityProfile, PairDecision, SenseSplit
from kgrag_core.graph.ports import ContextVectorSource, ResolutionStore
from kgrag_core.ids import content_hash
from kgrag_core.ports import Embedder
from kgrag_core.resolution.features import mean_direction
from kgrag_core.resolution.resolver import Overrides, ResolutionPlan, Resolver
from kgrag_core.resolution.senses import plan_senses

# As many chunks as a profile's context quotes (`ResolutionStore.profiles`).
CONTEXT_CHUNKS = 3


@dataclass(slots=True)
class ResolutionReport:
    profiles: int = 0
    compared_pairs: int = 0
    merges: int = 0
    review: int = 0
    refused: int = 0
    hubs: int = 0
    embedded: int = 0  # context vectors the model computed (profiles without cached chunk vectors)
    context_from_chunks: int = 0  # context vectors averaged from cached chunk vectors, no model call
    splits: list[SenseSplit] = field(default_factory=list)  # namesakes this pass split apart
    # canonical id -> the ids a merge of this pass moved under it (what a projection must re-read)
    merged: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        out = {k: int(getattr(self, k)) for k in ResolutionReport.__dataclass_fields__ if k not in ("merged", "splits")}
        return {**out, "splits": len(self.splits)}


@dataclass(slots=True)
class ResolutionService:
    store: ResolutionStore
    resolver: Resolver
    embedder: Embedder | None = None
    context_source: ContextVectorSource | None = None
    _vector_memo: dict[str, tuple[float, ...]] = field(default_factory=dict)
    overrides: Overrides = field(default_factory=Overrides)
    hub_min_degree: int = 25

    def run(self, doc_ids: Sequence[str] | None = None) -> ResolutionReport:
        """A full pass, or with `doc_ids` an incremental one over what those documents could merge with."""
        changed: set[str] | None = None
        if doc_ids is None:
            profiles = self.store.profiles()
        else:
            scope = self.store.incremental_scope(doc_ids, self.resolver.settings.blocking.max_block_size)
            changed = set(scope.changed)
            profiles = self.store.profiles(scope.entities) if scope.entities else []
        report = ResolutionReport(profiles=len(profiles))
        if not profiles:
            return report
        # Only an entity whose documents changed can have a new namesake among them.
        report.splits = self._split_namesakes(
            sorted(changed) if changed is not None else [p.entity_id for p in profiles]
        )
        if report.splits:  # the split entities lost documents, and their senses are new: read them again
            moved = [s.entity_id for s in report.splits]
            if changed is not None:
                changed.update(moved)
            profiles = self.store.profiles(sorted({*(p.entity_id for p in profiles), *moved}))
            report.profiles = len(profiles)
        current = self.store.canonical_of([p.entity_id for p in profiles])
        existing = {entity: canonical for entity, canonical in current.items() if entity != canonical}
        existing.update({canonical: canonical for canonical in set(existing.values())})
        vectors, chunks, report.embedded = self._vectors(profiles)
        report.context_from_chunks = len(chunks)
        # A split (a curator's or an earlier pass's) is never merged back by a score: only by a person.
        kept_apart = tuple(sorted({*self.overrides.must_not_merge, *self.store.kept_apart()}))
        overrides = Overrides(self.overrides.must_merge, kept_apart)
        plan: ResolutionPlan = self.resolver.resolve(
            profiles, vectors, existing=existing, overrides=overrides, changed=changed, context_chunks=chunks
        )
        self.store.apply_merges(plan.merges)
        for merge in plan.merges:
            report.merged.setdefault(merge.canonical_id, []).extend(merge.members)
        if plan.review:
            self.store.queue_for_review(plan.review)
        report.compared_pairs = plan.stats.compared_pairs
        report.merges = len(plan.merges)
        report.review = len(plan.review)
        report.refused = len(plan.refused)
        report.hubs = self.store.label_hubs(self.hub_min_degree)
        return report

    def _split_namesakes(self, entity_ids: Sequence[str]) -> list[SenseSplit]:
        """Keep namesakes apart: split off the documents whose mentions of an entity stand for another thing."""
        documents = self.store.document_profiles(entity_ids)
        if not documents:
            return []
        applied: list[SenseSplit] = []
        review: list[PairDecision] = []
        for proposal in plan_senses(self.resolver, documents, self._pair_vectors if self.embedder else None):
            split = self.store.split_mentions(
                proposal.from_id,
                proposal.doc_ids,
                decided_by="auto",
                reason=f"namesake: {proposal.basis.rule}",
                basis=(proposal.basis,),
            )
            applied.append(split)
            if proposal.basis.kind is DecisionKind.REVIEW:
                b = proposal.basis
                review.append(PairDecision(split.from_id, split.entity_id, b.kind, b.score, b.features, b.rule))
        if review:
            self.store.queue_for_review(review)
        return applied

    def _pair_vectors(self, profiles: Sequence[EntityProfile]) -> dict[str, Sequence[float]]:
        """Context vectors of a few document profiles (not memoised: a document profile is compared once)."""
        assert self.embedder is not None
        texts = [_profile_text(p) for p in profiles]
        return dict(zip((p.entity_id for p in profiles), self.embedder.embed_documents(texts), strict=True))

    def _vectors(
        self, profiles: Sequence[EntityProfile]
    ) -> tuple[dict[str, Sequence[float]], dict[str, list[tuple[float, ...]]], int]:
        """Context vectors by entity id, the chunk vectors of those averaged from chunks, how many the model
        embedded."""
        if self.embedder is None:
            return {}, {}, 0
        vectors: dict[str, Sequence[float]] = {}
        stored: dict[str, list[tuple[float, ...]]] = {}
        if self.context_source is not None:
            ids = [p.entity_id for p in profiles]
            stored = self.context_source.context_chunk_vectors(ids, self.embedder.model_id, CONTEXT_CHUNKS)
            vectors = {entity: mean_direction(chunk_vectors) for entity, chunk_vectors in stored.items()}
        embedded, fresh = self._embedded(self.embedder, [p for p in profiles if p.entity_id not in vectors])
        vectors.update(embedded)
        return vectors, stored, fresh

    def _embedded(
        self, embedder: Embedder, profiles: Sequence[EntityProfile]
    ) -> tuple[dict[str, tuple[float, ...]], int]:
        """The model's vectors of the profiles' quoted contexts, each distinct text embedded once."""
        texts = {p.entity_id: _profile_text(p) for p in profiles}
        keys = {entity: content_hash(text.encode("utf-8")) for entity, text in texts.items()}
        by_key = {keys[e]: texts[e] for e in texts}
        missing = sorted(k for k in by_key if k not in self._vector_memo)
        fresh: dict[str, tuple[float, ...]] = {}
        if missing:
            fresh = dict(zip(missing, embedder.embed_documents([by_key[k] for k in missing]), strict=True))
        # Only the current profiles' vectors are kept: a text no profile has any more is forgotten.
        self._vector_memo = {k: fresh[k] if k in fresh else self._vector_memo[k] for k in by_key}
        return {entity: self._vector_memo[key] for entity, key in keys.items()}, len(missing)


def _profile_text(profile: EntityProfile) -> str:
    """What the context embedding sees: the entity's type and name, then a little text around its mentions."""
    return f"{profile.type}: {profile.name}\n{profile.context}"[:1000]
