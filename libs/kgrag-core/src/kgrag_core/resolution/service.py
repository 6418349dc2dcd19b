"""The entity-resolution use case: read profiles, resolve, apply merges, queue reviews, relabel hubs.

After documents change, a pass reads only what they could affect (`run(doc_ids)`): their entities, every
entity sharing a name token or strong identifier with them, and those entities' clusters, so its cost
follows the change, not the graph. A full pass (`run()`, the periodic one: `kgrag entities resolve-pass`)
reads every profile and catches what the incremental scope cannot see, such as a phonetic or
embedding-only match. In both, clusters already merged keep their members (the resolver compares only pairs
that involve an entity not yet in a cluster).

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

from kgrag_core.graph.model import EntityProfile
from kgrag_core.graph.ports import ContextVectorSource, ResolutionStore
from kgrag_core.ids import content_hash
from kgrag_core.ports import Embedder
from kgrag_core.resolution.features import mean_direction
from kgrag_core.resolution.resolver import Overrides, ResolutionPlan, Resolver

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
    # canonical id -> the ids a merge of this pass moved under it (what a projection must re-read)
    merged: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        return {k: int(getattr(self, k)) for k in ResolutionReport.__dataclass_fields__ if k != "merged"}


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
        if doc_ids is None:
            profiles = self.store.profiles()
        else:
            near = self.store.entities_near_documents(doc_ids)
            profiles = self.store.profiles(near) if near else []
        report = ResolutionReport(profiles=len(profiles))
        if not profiles:
            return report
        current = self.store.canonical_of([p.entity_id for p in profiles])
        existing = {entity: canonical for entity, canonical in current.items() if entity != canonical}
        existing.update({canonical: canonical for canonical in set(existing.values())})
        vectors, report.context_from_chunks, report.embedded = self._vectors(profiles)
        plan: ResolutionPlan = self.resolver.resolve(profiles, vectors, existing=existing, overrides=self.overrides)
        for merge in plan.merges:
            self.store.apply_merge(merge)
            report.merged.setdefault(merge.canonical_id, []).extend(merge.members)
        if plan.review:
            self.store.queue_for_review(plan.review)
        report.compared_pairs = plan.stats.compared_pairs
        report.merges = len(plan.merges)
        report.review = len(plan.review)
        report.refused = len(plan.refused)
        report.hubs = self.store.label_hubs(self.hub_min_degree)
        return report

    def _vectors(self, profiles: Sequence[EntityProfile]) -> tuple[dict[str, Sequence[float]], int, int]:
        """Context vectors by entity id, how many came from chunk vectors, how many the model embedded."""
        if self.embedder is None:
            return {}, 0, 0
        vectors: dict[str, Sequence[float]] = {}
        if self.context_source is not None:
            ids = [p.entity_id for p in profiles]
            stored = self.context_source.context_chunk_vectors(ids, self.embedder.model_id, CONTEXT_CHUNKS)
            vectors = {entity: mean_direction(chunk_vectors) for entity, chunk_vectors in stored.items()}
        from_chunks = len(vectors)
        embedded, fresh = self._embedded(self.embedder, [p for p in profiles if p.entity_id not in vectors])
        vectors.update(embedded)
        return vectors, from_chunks, fresh

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
