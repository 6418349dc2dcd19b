"""The resolver on the labelled Northwind set (pairwise P/R, purity), incremental use, decision zones, the
canonical choice, and blocking that never compares all pairs."""

from __future__ import annotations

import collections
import random
from pathlib import Path

import pytest

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph.model import DecisionKind, EntityProfile
from kgrag_core.resolution import (
    LabelledProfile,
    Resolver,
    ResolverSettings,
    Rule,
    canonical_member,
    parse_labelled_profiles,
    score_resolution,
    scores_table,
)

ROOT = Path(__file__).resolve().parents[2]
LABELLED = ROOT / "corpora" / "northwind" / "resolution" / "entities.jsonl"


@pytest.fixture(scope="module")
def labelled() -> list[LabelledProfile]:
    return parse_labelled_profiles(LABELLED.read_text("utf-8").splitlines())


@pytest.fixture(scope="module")
def vectors(labelled: list[LabelledProfile]) -> dict[str, list[float]]:
    """Name + context embedded as the indexer embeds chunks (MiniLM, local)."""
    profiles = [row.profile for row in labelled]
    embedded = OnnxMiniLmEmbedder().embed_documents([f"{p.name}. {p.context}" for p in profiles])
    return {p.entity_id: list(vector) for p, vector in zip(profiles, embedded, strict=True)}


@pytest.fixture(scope="module")
def chunk_vectors(labelled: list[LabelledProfile]) -> dict[str, list[float]]:
    """The context alone embedded, as the chunk it quotes is embedded: what resolution uses in a pipeline
    (the mean of the vectors of the chunks naming the entity; here one chunk each)."""
    profiles = [row.profile for row in labelled]
    embedded = OnnxMiniLmEmbedder().embed_documents([p.context for p in profiles])
    return {p.entity_id: list(vector) for p, vector in zip(profiles, embedded, strict=True)}


def partition(canonical: dict[str, str]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for entity_id, head in canonical.items():
        groups.setdefault(head, set()).add(entity_id)
    return {frozenset(group) for group in groups.values()}


def test_labelled_set_shape(labelled: list[LabelledProfile]) -> None:
    clusters = {row.gold_cluster for row in labelled}
    assert len(labelled) >= 80
    assert len(clusters) < len(labelled)  # it has duplicates
    ids = {row.profile.entity_id for row in labelled}
    for row in labelled:
        assert set(row.profile.neighbours) <= ids, row.profile.entity_id
    assert any(alias in {"he", "she", "it"} for row in labelled for alias in row.profile.aliases)
    assert any(alias in {"team", "platform"} for row in labelled for alias in row.profile.aliases)


def test_resolution_on_the_labelled_set(
    labelled: list[LabelledProfile],
    vectors: dict[str, list[float]],
    chunk_vectors: dict[str, list[float]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    gold = {row.profile.entity_id: row.gold_cluster for row in labelled}
    profiles = [row.profile for row in labelled]
    with_context = Resolver().resolve(profiles, vectors)
    with_chunks = Resolver().resolve(profiles, chunk_vectors)
    # As a pass gives them (each vector with the chunk vectors it averages): no labelled pair shares a chunk.
    per_chunk = {entity: [vector] for entity, vector in chunk_vectors.items()}
    assert Resolver().resolve(profiles, chunk_vectors, context_chunks=per_chunk).canonical == with_chunks.canonical
    names_only = Resolver().resolve(profiles)
    full = score_resolution(with_context.canonical, gold)
    chunked = score_resolution(with_chunks.canonical, gold)
    bare = score_resolution(names_only.canonical, gold)
    rows = [("names + context vectors", full), ("names + chunk vectors", chunked), ("names only", bare)]
    with capsys.disabled():
        print("\n" + scores_table(rows))
    for scores in (full, chunked):
        assert scores.precision >= 0.9
        assert scores.recall >= 0.7
        assert scores.purity >= 0.9
    assert chunked.recall > bare.recall  # the chunk vectors carry context evidence the names lack
    assert bare.precision >= 0.9
    # The namesakes that must stay apart, whatever the totals say.
    apart = [
        ("p-tom-becker", "p-tomasz-nowak"),
        ("p-maria-chen", "p-wei-chen"),
        ("p-m-chen", "p-w-chen"),
        ("sys-relay", "sys-relay-noun"),
        ("p-sam-ortiz", "p-sam-ortiz-cobalt"),
        ("o-baltic-haulage", "o-baltic-haulage-2"),
        ("sys-compass", "sys-platform-noun"),
    ]
    for a, b in apart:
        assert with_context.canonical[a] != with_context.canonical[b], (a, b)
        assert with_chunks.canonical[a] != with_chunks.canonical[b], (a, b)
        assert names_only.canonical[a] != names_only.canonical[b], (a, b)


def test_incremental_resolution_matches_a_full_pass(
    labelled: list[LabelledProfile], vectors: dict[str, list[float]]
) -> None:
    profiles = [row.profile for row in labelled]
    shuffled = profiles[:]
    random.Random(5).shuffle(shuffled)
    first_batch = shuffled[: len(shuffled) * 2 // 3]
    resolver = Resolver()
    earlier = resolver.resolve(first_batch, {p.entity_id: vectors[p.entity_id] for p in first_batch})
    incremental = resolver.resolve(profiles, vectors, existing=earlier.canonical)
    full = resolver.resolve(profiles, vectors)
    assert partition(incremental.canonical) == partition(full.canonical)
    assert incremental.canonical == full.canonical  # the canonical choice is stable too
    assert incremental.stats.new_profiles == len(profiles) - len(first_batch)
    assert incremental.stats.compared_pairs < full.stats.compared_pairs


def test_incremental_passes_scoring_only_changed_pairs_match_a_full_pass(
    labelled: list[LabelledProfile], vectors: dict[str, list[float]]
) -> None:
    """As ingest runs it: three batches, each pass scoring only pairs with an entity of its batch."""
    profiles = [row.profile for row in labelled]
    shuffled = profiles[:]
    random.Random(11).shuffle(shuffled)
    resolver, compared = Resolver(), 0
    seen: list[EntityProfile] = []
    canonical: dict[str, str] = {}
    for start in range(0, len(shuffled), len(shuffled) // 3 + 1):
        batch = shuffled[start : start + len(shuffled) // 3 + 1]
        seen += batch
        sizes = collections.Counter(canonical.values())
        existing = {e: c for e, c in canonical.items() if sizes[c] > 1}  # the clusters so far, as the store has them
        plan = resolver.resolve(
            seen,
            {p.entity_id: vectors[p.entity_id] for p in seen},
            existing=existing,
            changed={p.entity_id for p in batch},
        )
        canonical, compared = plan.canonical, compared + plan.stats.compared_pairs
    full = resolver.resolve(profiles, vectors)
    assert partition(canonical) == partition(full.canonical)
    every_pass = 0  # the same passes without `changed`: every unresolved pair in the scope, again and again
    seen = []
    for start in range(0, len(shuffled), len(shuffled) // 3 + 1):
        seen += shuffled[start : start + len(shuffled) // 3 + 1]
        every_pass += resolver.resolve(seen, {p.entity_id: vectors[p.entity_id] for p in seen}).stats.compared_pairs
    assert compared < every_pass


def test_merge_records_describe_each_cluster(labelled: list[LabelledProfile]) -> None:
    profiles = [row.profile for row in labelled]
    mentions = {p.entity_id: p.mentions for p in profiles}
    plan = Resolver().resolve(profiles)
    assert plan.merges
    for record in plan.merges:
        members = sorted([m for m, head in plan.canonical.items() if head == record.canonical_id])
        assert record.canonical_id == canonical_member(members, mentions)
        assert set(record.members) == set(members) - {record.canonical_id}
        assert record.basis and all(d.kind is DecisionKind.MERGE for d in record.basis)
        assert record.merge_id.startswith("mrg_")
    assert Resolver().resolve(profiles).merges == plan.merges  # deterministic


def test_canonical_member_is_most_mentioned_then_smallest_id() -> None:
    assert canonical_member(["b", "a", "c"], {"a": 1, "b": 5, "c": 5}) == "b"
    assert canonical_member(["b", "a"], {"a": 2, "b": 2}) == "a"


def test_decision_zones_follow_the_thresholds() -> None:
    a = EntityProfile("a", "Organization", "Brightwater Foods")
    b = EntityProfile("b", "Organization", "Brightwater")
    default = Resolver().resolve([a, b])
    assert [(d.a, d.b, d.kind) for d in default.review] == [("a", "b", DecisionKind.REVIEW)]
    assert default.review[0].rule == Rule.REVIEW
    assert default.canonical["a"] != default.canonical["b"]  # "possibly same as" stays separate
    lenient = Resolver(ResolverSettings(high=0.6, low=0.3)).resolve([a, b])
    assert lenient.canonical["a"] == lenient.canonical["b"] and not lenient.review
    strict = Resolver(ResolverSettings(high=0.95, low=0.9)).resolve([a, b])
    assert not strict.review and strict.canonical["a"] != strict.canonical["b"]


def test_bad_thresholds_are_configuration_errors() -> None:
    with pytest.raises(KgragError) as caught:
        ResolverSettings(high=0.5, low=0.7)
    assert caught.value.code is ErrorCode.CONFIGURATION_INVALID


def _synthetic(count: int, seed: int) -> tuple[list[EntityProfile], dict[str, list[float]]]:
    rng = random.Random(seed)
    syllables = ["ka", "ri", "to", "men", "sa", "lo", "vi", "den", "mar", "qu", "el", "zo", "bra", "nik", "ter", "ul"]
    given = ["".join(rng.sample(syllables, 2)).title() for _ in range(80)]
    family = ["".join(rng.sample(syllables, 3)).title() for _ in range(400)]
    types = ["Person", "Organization", "System"]
    centres = [[rng.gauss(0.0, 1.0) for _ in range(32)] for _ in range(count // 3)]
    profiles: list[EntityProfile] = []
    vectors: dict[str, list[float]] = {}
    for index in range(count):
        entity_type = rng.choice(types)
        name = f"{rng.choice(given)} {rng.choice(family)}" if entity_type == "Person" else rng.choice(family)
        if entity_type == "Organization":
            name += rng.choice(["", " Ltd", " GmbH", " Holdings"])
        entity_id = f"s{index:05d}"
        profiles.append(EntityProfile(entity_id, entity_type, name, context=name))
        centre = rng.choice(centres)
        vectors[entity_id] = [x + rng.gauss(0.0, 0.3) for x in centre]
    return profiles, vectors


def test_no_all_pairs_comparison_on_2000_profiles() -> None:
    profiles, vectors = _synthetic(2000, seed=11)
    plan = Resolver().resolve(profiles, vectors)
    all_pairs = len(profiles) * (len(profiles) - 1) // 2
    assert 0 < plan.stats.compared_pairs < all_pairs // 50
    assert plan.stats.embedding_probes < all_pairs // 20
    assert all(size > Resolver().settings.blocking.max_block_size for size in plan.stats.oversized_blocks.values())


def test_oversized_blocks_are_skipped_and_reported() -> None:
    profiles = [EntityProfile(f"e{i:03d}", "Person", f"Anna Surname{i:03d}") for i in range(60)]
    plan = Resolver().resolve(profiles)
    assert plan.stats.oversized_blocks["Person|token:anna"] == 60
    assert plan.stats.compared_pairs < 60 * 59 // 2


def test_scores_by_hand() -> None:
    predicted = {"a": "1", "b": "1", "c": "1", "d": "2"}
    gold = {"a": "x", "b": "x", "c": "y", "d": "y"}
    scores = score_resolution(predicted, gold)
    assert (scores.predicted_pairs, scores.gold_pairs, scores.true_pairs) == (3, 2, 1)
    assert scores.precision == pytest.approx(1 / 3)
    assert scores.recall == pytest.approx(1 / 2)
    assert scores.f1 == pytest.approx(0.4)
    assert scores.purity == pytest.approx(3 / 4)
    assert scores.inverse_purity == pytest.approx(3 / 4)
    assert "| 0.333 | 0.500 | 0.400 | 0.750 | 0.750 |" in scores_table([("x", scores)])
    with pytest.raises(KgragError):
        score_resolution({"a": "1"}, gold)


def test_parse_labelled_profiles_errors() -> None:
    with pytest.raises(KgragError) as caught:
        parse_labelled_profiles(['{"entity_id": "a", "type": "Person", "name": "A"}'])
    assert caught.value.code is ErrorCode.MISSING_FIELD
    with pytest.raises(KgragError) as caught:
        parse_labelled_profiles(["{not json"])
    assert caught.value.code is ErrorCode.MALFORMED_JSON
    row = '{"entity_id": "a", "type": "Person", "name": "A", "gold_cluster": "g"}'
    with pytest.raises(KgragError):
        parse_labelled_profiles([row, row])
