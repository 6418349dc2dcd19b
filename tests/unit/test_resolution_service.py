"""ResolutionService's context vectors: the mean of the entity's cached chunk vectors, the model only for an
entity with none (and then each distinct context once while the process runs)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from kgrag_core.graph.model import DocumentProfile, EntityProfile, MergeRecord, PairDecision
from kgrag_core.resolution.features import mean_direction
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

    def profiles(self, entity_ids: Sequence[str] | None = None) -> list[EntityProfile]:
        return [p for p in self.rows if entity_ids is None or p.entity_id in entity_ids]

    def entities_near_documents(self, doc_ids: Sequence[str]) -> list[str]:
        return sorted(p.entity_id for p in self.rows)

    def canonical_of(self, entity_ids: Sequence[str]) -> dict[str, str]:
        return {e: e for e in entity_ids}

    def apply_merge(self, record: MergeRecord) -> None:
        self.merges.append(record)

    def queue_for_review(self, pairs: Sequence[PairDecision]) -> None:
        pass

    def label_hubs(self, min_degree: int) -> int:
        return 0

    def document_profiles(self, entity_ids: Sequence[str]) -> list[DocumentProfile]:
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

    def resolve(
        self,
        profiles: Sequence[EntityProfile],
        vectors: Mapping[str, Sequence[float]] | None = None,
        existing: Mapping[str, str] | None = None,
        overrides: Overrides | None = None,
    ) -> ResolutionPlan:
        self.vectors.append({k: tuple(v) for k, v in (vectors or {}).items()})
        return super().resolve(profiles, vectors, existing, overrides)


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


def test_mean_direction() -> None:
    assert mean_direction([(3.0, 4.0)]) == pytest.approx((0.6, 0.8))
    assert mean_direction([(1.0, 0.0), (0.0, 1.0), (1.0, 0.0)]) == pytest.approx((2 / math.sqrt(5), 1 / math.sqrt(5)))
    assert mean_direction([(1.0, -1.0), (-1.0, 1.0)]) == (0.0, 0.0)
    with pytest.raises(ValueError, match="at least one"):
        mean_direction([])
    with pytest.raises(ValueError, match="inhomogeneous"):
        mean_direction([(1.0, 0.0), (1.0, 0.0, 0.0)])  # vectors of two models never mix
