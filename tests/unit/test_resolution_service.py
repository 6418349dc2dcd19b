"""ResolutionService's context vectors: the mean of the entity's cached chunk vectors, the model only for an
entity with none (and then each distinct context once while the process runs)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from kgrag_core.graph.model import DocumentProfile, EntityProfile, MergeRecord, PairDecision
from kgrag_core.graph.ports import ResolutionScope
from kgrag_core.resolution.features import mean_direction, own_context_directions
from kgrag_core.resolution.resolver import Overrides, ResolutionPlan, Resolver
from kgrag_core.resolution.service import CONTEXT_CHUNKS, ResolutionService

MARIA = EntityProfile("ent_maria", "Person", "Maria Chen", context="Maria Chen approved the plan.", mentions=3)
M_CHEN = EntityProfile("ent_mchen", "Person", "M. Chen", context="Signed off by M. Chen.", mentions=1)
WEI = EntityProfile("ent_wei", "Person", "Wei Chen", context="Wei Chen runs the Kestrel lab.", mentions=2)


@dataclass
class Store:
    """The ResolutionStore calls a pass makes, over a fixed set of profiles; merges are recorded."""

    rows: list[EntityProfile]
    merges: list[MergeRecord] = field(default_factory=list)
    changed: tuple[str, ...] | None = None  # what the documents name (None: every row)
    documents_asked: list[list[str]] = field(default_factory=list)

    def profiles(self, entity_ids: Sequence[str] | None = None) -> list[EntityProfile]:
        return [p for p in self.rows if entity_ids is None or p.entity_id in entity_ids]

    def entities_near_documents(self, doc_ids: Sequence[str]) -> list[str]:
        return sorted(p.entity_id for p in self.rows)

    def incremental_scope(self, doc_ids: Sequence[str], max_token_entities: int) -> ResolutionScope:
        everyone = tuple(self.entities_near_documents(doc_ids))
        return ResolutionScope(everyone if self.changed is None else self.changed, everyone)

    def canonical_of(self, entity_ids: Sequence[str]) -> dict[str, str]:
        return {e: e for e in entity_ids}

    def apply_merge(self, record: MergeRecord) -> None:
        self.merges.append(record)

    def apply_merges(self, records: Sequence[MergeRecord]) -> None:
        self.merges.extend(records)

    def queue_for_review(self, pairs: Sequence[PairDecision]) -> None:
        pass

    def label_hubs(self, min_degree: int) -> int:
        return 0

    def document_profiles(self, entity_ids: Sequence[str]) -> list[DocumentProfile]:
        self.documents_asked.append(list(entity_ids))
        return []  # every profile is named in one document: no namesakes to split

    def kept_apart(self) -> list[tuple[str, str]]:
        return []


@dataclass
class ChunkVectors:
    """Cached chunk vectors per entity, as the PostgreSQL store returns them; records each request."""

    by_entity: dict[str, list[tuple[float, ...]]]
    requests: list[tuple[list[str], str, int]] = field(default_factory=list)

    def context_chunk_vectors(
        self, entity_ids: Sequence[str], model_id: str, limit: int
    ) -> dict[str, list[tuple[float, ...]]]:
        self.requests.append((list(entity_ids), model_id, limit))
        return {e: self.by_entity[e][:limit] for e in entity_ids if e in self.by_entity}


@dataclass
class CountingModel:
    """An embedder that records every text it is asked to embed (a fixed direction per text length)."""

    texts: list[str] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        return "counting-model"

    @property
    def dimension(self) -> int:
        return 3

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.texts.extend(texts)
        return [(1.0, float(len(t) % 7), 0.0) for t in texts]

    def embed_query(self, text: str) -> tuple[float, ...]:
        raise AssertionError("resolution never embeds a query")


class RecordingResolver(Resolver):
    def __init__(self) -> None:
        super().__init__()
        self.vectors: list[dict[str, tuple[float, ...]]] = []
        self.changed: list[list[str] | None] = []
        self.plans: list[ResolutionPlan] = []

    def resolve(
        self,
        profiles: Sequence[EntityProfile],
        vectors: Mapping[str, Sequence[float]] | None = None,
        existing: Mapping[str, str] | None = None,
        overrides: Overrides | None = None,
        changed: Collection[str] | None = None,
        context_chunks: Mapping[str, Sequence[Sequence[float]]] | None = None,
    ) -> ResolutionPlan:
        self.vectors.append({k: tuple(v) for k, v in (vectors or {}).items()})
        self.changed.append(None if changed is None else sorted(changed))
        plan = super().resolve(profiles, vectors, existing, overrides, changed, context_chunks)
        self.plans.append(plan)
        return plan


def test_context_vectors_come_from_chunk_vectors_and_the_model_embeds_only_what_has_none() -> None:
    chunks = ChunkVectors({"ent_maria": [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)], "ent_mchen": [(0.0, 2.0, 0.0)]})
    model, resolver = CountingModel(), RecordingResolver()
    service = ResolutionService(Store([MARIA, M_CHEN, WEI]), resolver, embedder=model, context_source=chunks)
    report = service.run(["doc-1"])
    assert (report.context_from_chunks, report.embedded) == (2, 1)
    assert model.texts == ["Person: Wei Chen\nWei Chen runs the Kestrel lab."]  # only the entity without chunks
    assert chunks.requests == [(["ent_maria", "ent_mchen", "ent_wei"], "counting-model", CONTEXT_CHUNKS)]
    seen = resolver.vectors[0]
    assert seen["ent_maria"] == pytest.approx((math.sqrt(0.5), math.sqrt(0.5), 0.0))
    assert seen["ent_mchen"] == pytest.approx((0.0, 1.0, 0.0))  # normalised
    assert seen["ent_wei"] == (1.0, float(len(model.texts[0]) % 7), 0.0)
    again = service.run(["doc-1"])
    assert (again.context_from_chunks, again.embedded) == (2, 0)  # the unchanged context is not embedded twice
    assert len(model.texts) == 1


def test_without_a_chunk_vector_source_every_context_is_embedded_once() -> None:
    model = CountingModel()
    service = ResolutionService(Store([MARIA, M_CHEN, WEI]), RecordingResolver(), embedder=model)
    report = service.run()
    assert (report.context_from_chunks, report.embedded) == (0, 3)
    assert service.run().embedded == 0 and len(model.texts) == 3


def test_without_a_model_there_are_no_context_vectors() -> None:
    chunks, resolver = ChunkVectors({"ent_maria": [(1.0, 0.0, 0.0)]}), RecordingResolver()
    report = ResolutionService(Store([MARIA, WEI]), resolver, context_source=chunks).run()
    assert (report.context_from_chunks, report.embedded) == (0, 0)
    assert resolver.vectors == [{}] and chunks.requests == []  # the model id names the cached vectors


def test_an_incremental_pass_scores_only_pairs_with_an_entity_its_documents_name() -> None:
    # Maria Chen, M. Chen and Wei Chen share "chen"; the documents name only Wei Chen.
    store, resolver = Store([MARIA, M_CHEN, WEI], changed=("ent_wei",)), RecordingResolver()
    report = ResolutionService(store, resolver).run(["doc-wei"])
    assert resolver.changed == [["ent_wei"]] and report.profiles == 3  # the others are read as its block-mates
    assert report.compared_pairs == 2  # Wei with each of the others; Maria with M. Chen was scored before
    assert store.documents_asked == [["ent_wei"]]  # namesakes only among the changed entities
    # Positive control: the same store with every entity changed scores the Maria / M. Chen pair too and
    # merges it, as a full pass does.
    everyone, full_resolver = Store([MARIA, M_CHEN, WEI]), RecordingResolver()
    full = ResolutionService(everyone, full_resolver).run(["doc-wei"])
    assert full.compared_pairs == 3 and full.merges == 1
    assert {m.canonical_id for m in everyone.merges} == {"ent_maria"}
    assert full_resolver.plans[0].canonical == Resolver().resolve([MARIA, M_CHEN, WEI]).canonical
    assert ResolutionService(Store([MARIA, M_CHEN, WEI]), RecordingResolver()).run().compared_pairs == 3


def test_entities_named_in_the_same_chunk_are_not_alike_by_that_chunk() -> None:
    """Pavel and Samuel Novak, siblings of one biography: one chunk vector each, the same one. The context feature
    compares the chunks they do not share (none: no context evidence), and the pair is not queued for review."""
    pavel = EntityProfile("ent_pavel", "Person", "Pavel Novak", context="Pavel Novak and Samuel Novak.", mentions=2)
    samuel = EntityProfile("ent_samuel", "Person", "Samuel Novak", context="Pavel Novak and Samuel Novak.", mentions=2)
    biography = (0.6, 0.8, 0.0)
    queued: list[PairDecision] = []

    class Queue(Store):
        def queue_for_review(self, pairs: Sequence[PairDecision]) -> None:
            queued.extend(pairs)

    alone = ChunkVectors({"ent_pavel": [biography], "ent_samuel": [biography]})
    report = ResolutionService(Queue([pavel, samuel]), Resolver(), embedder=CountingModel(), context_source=alone).run()
    assert report.compared_pairs == 1 and report.review == 0 and queued == []
    # Positive control: the same vectors without the chunks they came from read as the same context and
    # lift the pair into review (what the review queue filled up with).
    vectors = {"ent_pavel": biography, "ent_samuel": biography}
    lifted = Resolver().resolve([pavel, samuel], vectors)
    assert [(d.a, d.b) for d in lifted.review] == [("ent_pavel", "ent_samuel")]
    assert dict(lifted.review[0].features)["context"] == 1.0


def test_own_context_directions_leave_out_the_shared_chunks() -> None:
    shared, a_own, b_own = (1.0, 0.0, 0.0), (0.0, 3.0, 0.0), (0.0, 0.0, 2.0)
    assert own_context_directions([shared, a_own], [shared, b_own]) == ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    assert own_context_directions([shared], [shared, b_own]) is None  # the first has no chunk of its own
    assert own_context_directions([a_own], [b_own]) == ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0))  # nothing shared


def test_mean_direction() -> None:
    assert mean_direction([(3.0, 4.0)]) == pytest.approx((0.6, 0.8))
    assert mean_direction([(1.0, 0.0), (0.0, 1.0), (1.0, 0.0)]) == pytest.approx((2 / math.sqrt(5), 1 / math.sqrt(5)))
    assert mean_direction([(1.0, -1.0), (-1.0, 1.0)]) == (0.0, 0.0)
    with pytest.raises(ValueError, match="at least one"):
        mean_direction([])
    with pytest.raises(ValueError, match="inhomogeneous"):
        mean_direction([(1.0, 0.0), (1.0, 0.0, 0.0)])  # vectors of two models never mix
