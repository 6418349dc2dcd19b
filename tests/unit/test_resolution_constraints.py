"""Each hard constraint on its own: strong ids, types, alias chaining, pronouns and generic names, cluster-level
checks and overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph.model import DecisionKind, EntityProfile, PairDecision
from kgrag_core.resolution import (
    AliasIndex,
    Overrides,
    Resolver,
    ResolverSettings,
    Rule,
    block_keys,
    candidate_pairs,
    parse_overrides,
)

ROOT = Path(__file__).resolve().parents[2]


def person(
    entity_id: str,
    name: str,
    *,
    aliases: tuple[str, ...] = (),
    email: str | None = None,
    attributes: tuple[tuple[str, str], ...] = (),
    mentions: int = 1,
) -> EntityProfile:
    strong = (("email", email),) if email else ()
    return EntityProfile(entity_id, "Person", name, aliases, strong, attributes, mentions=mentions)


def together(canonical: dict[str, str], a: str, b: str) -> bool:
    return canonical[a] == canonical[b]


def decide(a: EntityProfile, b: EntityProfile, vectors: dict[str, list[float]] | None = None) -> PairDecision:
    return Resolver().decide(a, b, alias_index=AliasIndex([a, b]), vectors=vectors)


def test_different_strong_ids_of_one_kind_never_merge_even_with_identical_names() -> None:
    a = person("a", "Sam Ortiz", email="sam.ortiz@northwind.example")
    b = person("b", "Sam Ortiz", email="sam.ortiz@cobaltcloud.example")
    decision = decide(a, b)
    assert decision.kind is DecisionKind.SEPARATE
    assert decision.rule == f"{Rule.CONFLICTING_STRONG_IDS}:email"
    plan = Resolver().resolve([a, b])
    assert not together(plan.canonical, "a", "b")
    assert [(d.a, d.b) for d in plan.refused] == [("a", "b")]  # reported: its score alone would have merged it


def test_strong_ids_of_different_kinds_do_not_conflict_and_a_shared_one_merges() -> None:
    a = EntityProfile("a", "Person", "Maria Chen", strong_ids=(("email", "maria.chen@northwind.example"),))
    b = EntityProfile(
        "b", "Person", "MC", strong_ids=(("user_id", "maria.chen"), ("email", "Maria.Chen@Northwind.example"))
    )
    decision = decide(a, b)
    assert decision.kind is DecisionKind.MERGE
    assert decision.rule == Rule.SHARED_STRONG_ID


def test_different_types_never_merge() -> None:
    system = EntityProfile("s", "System", "Atlas")
    vendor = EntityProfile("v", "Organization", "Atlas")
    decision = decide(system, vendor)
    assert decision.kind is DecisionKind.SEPARATE
    assert decision.rule.startswith(Rule.TYPE_MISMATCH)
    assert not block_keys(system) & block_keys(vendor)  # blocking never even pairs them


def test_different_codes_never_merge_however_alike_they_look() -> None:
    # One digit apart: rapidfuzz calls these near-identical names, yet they are two incidents.
    a = EntityProfile("a", "Incident", "INC-2023-019", context="picking outage at LEJ-2")
    b = EntityProfile("b", "Incident", "INC-2023-011", context="picking outage at LEJ-2")
    decision = decide(a, b, vectors={"a": [1.0, 0.0], "b": [1.0, 0.0]})
    assert decision.kind is DecisionKind.SEPARATE and decision.rule.startswith(Rule.IDENTIFIER_MISMATCH)
    assert not together(Resolver().resolve([a, b]).canonical, "a", "b")
    # The same code, however written, and a code the other side lists as its alias, may still merge.
    same = decide(EntityProfile("c", "Incident", "INC-2023-019"), EntityProfile("d", "Incident", "inc-2023-019 "))
    assert not same.rule.startswith(Rule.IDENTIFIER_MISMATCH)
    aliased = decide(EntityProfile("e", "Ticket", "NW-4812"), EntityProfile("f", "Ticket", "NW-4812A", ("NW-4812",)))
    assert not aliased.rule.startswith(Rule.IDENTIFIER_MISMATCH)


def test_alias_chaining_is_refused() -> None:
    # A chunk calls Cobalt Cloud an alias of Northwind, another calls Cobalt an alias of Cobalt Cloud.
    northwind = EntityProfile("nw", "Organization", "Northwind Logistics", aliases=("Cobalt Cloud",))
    cobalt_cloud = EntityProfile("cc", "Organization", "Cobalt Cloud", aliases=("Cobalt",))
    cobalt = EntityProfile("co", "Organization", "Cobalt")
    profiles = [northwind, cobalt_cloud, cobalt]
    index = AliasIndex(profiles)
    assert index.alias_link("nw", "cc") is None  # Cobalt Cloud is an entity in its own right
    assert index.alias_link("cc", "co") == "cobalt"  # a bare mention, one target: fine
    plan = Resolver().resolve(profiles)
    assert together(plan.canonical, "cc", "co")
    assert not together(plan.canonical, "nw", "cc")
    assert not together(plan.canonical, "nw", "co")


def test_an_alias_links_only_when_it_points_to_a_single_target() -> None:
    becker = person("tb", "Tom Becker", aliases=("Tom",))
    nowak = person("tn", "Tomasz Nowak", aliases=("Tom",))
    bare = person("t", "Tom")
    assert AliasIndex([becker, bare]).alias_link("tb", "t") == "tom"
    ambiguous = AliasIndex([becker, nowak, bare])
    assert ambiguous.alias_link("tb", "t") is None
    assert ambiguous.alias_link("tn", "t") is None
    plan = Resolver().resolve([becker, nowak, bare])
    assert not together(plan.canonical, "tb", "tn")
    assert not together(plan.canonical, "t", "tb")
    assert not together(plan.canonical, "t", "tn")


def test_an_alias_that_names_a_thing_with_its_own_identity_does_not_link() -> None:
    northwind = EntityProfile("nw", "Organization", "Northwind Logistics", aliases=("Atlas Freight",))
    vendor = EntityProfile("af", "Organization", "Atlas Freight", strong_ids=(("domain", "atlasfreight.example"),))
    assert AliasIndex([northwind, vendor]).alias_link("nw", "af") is None
    assert not together(Resolver().resolve([northwind, vendor]).canonical, "nw", "af")


def test_pronoun_aliases_are_never_keys() -> None:
    becker = person("tb", "Tom Becker", aliases=("he", "him"))
    nowak = person("tn", "Tomasz Nowak", aliases=("he",))
    assert not any("he" in key.split(":")[-1].split() for key in block_keys(becker))
    assert candidate_pairs([becker, nowak]).pairs == set()
    pronoun_named = person("p", "he")
    decision = decide(becker, pronoun_named)
    assert decision.kind is DecisionKind.SEPARATE
    assert decision.rule == Rule.NO_MATCHING_KEY
    assert block_keys(pronoun_named) == set()


def test_lower_case_one_word_name_never_matches_the_capitalised_system() -> None:
    system = EntityProfile("r", "System", "Relay")
    noun = EntityProfile("n", "System", "relay")
    shouting = EntityProfile("u", "System", "RELAY")
    vectors = {"r": [1.0, 0.0], "n": [1.0, 0.0], "u": [1.0, 0.0]}  # the same context, to force a comparison
    plan = Resolver().resolve([system, noun, shouting], vectors)
    assert together(plan.canonical, "r", "u")
    assert not together(plan.canonical, "r", "n")
    noun_decision = decide(system, noun, vectors=vectors)
    assert noun_decision.rule == Rule.NO_MATCHING_KEY
    assert noun_decision.kind is DecisionKind.SEPARATE


def test_cluster_level_conflicting_ids_stop_a_chain() -> None:
    # a-b and b-c are fine pair by pair; a and c hold different e-mail addresses.
    a = person("a", "Maria Chen", email="maria.chen@northwind.example")
    b = person("b", "Maria Chen", attributes=(("role", "VP Engineering"),))
    c = person("c", "Maria Chen", email="maria.chen@velora.example")
    plan = Resolver().resolve([a, b, c])
    assert not together(plan.canonical, "a", "c")
    assert together(plan.canonical, "a", "b") != together(plan.canonical, "b", "c")
    assert any(d.rule.startswith(Rule.CLUSTER_CONFLICTING_IDS) for d in plan.refused)


def test_cluster_size_cap_stops_a_giant_component() -> None:
    profiles = [EntityProfile(f"e{i}", "Organization", "Acme Holding") for i in range(7)]
    plan = Resolver(ResolverSettings(max_cluster_size=3)).resolve(profiles)
    sizes: dict[str, int] = {}
    for canonical in plan.canonical.values():
        sizes[canonical] = sizes.get(canonical, 0) + 1
    assert max(sizes.values()) == 3
    assert any(d.rule.startswith(Rule.CLUSTER_SIZE_CAP) for d in plan.refused)


def test_overrides_win_over_scores_and_constraints() -> None:
    a = person("a", "Sam Ortiz", email="sam.ortiz@northwind.example")
    b = person("b", "Sam Ortiz", email="sam.ortiz@personal.example")
    c = person("c", "Samuel Ortiz-Reyes")
    d = person("d", "Priya Raman")
    e = person("e", "Priya Raman ")
    overrides = Overrides(must_merge=(("a", "b"), ("a", "c")), must_not_merge=(("d", "e"),))
    plan = Resolver().resolve([a, b, c, d, e], overrides=overrides)
    assert together(plan.canonical, "a", "b")
    assert together(plan.canonical, "a", "c")  # never in one block: the override adds the pair
    assert not together(plan.canonical, "d", "e")
    assert {record.decided_by for record in plan.merges} == {"override"}
    assert together(Resolver().resolve([d, e]).canonical, "d", "e")  # what the override prevented


def test_must_not_merge_also_splits_an_existing_cluster() -> None:
    d = person("d", "Priya Raman", mentions=3)
    e = person("e", "P. Raman")
    plan = Resolver().resolve([d, e], existing={"d": "d", "e": "d"}, overrides=Overrides(must_not_merge=(("d", "e"),)))
    assert not together(plan.canonical, "d", "e")
    assert any(r.rule.startswith(Rule.CLUSTER_OVERRIDE_SEPARATE) for r in plan.refused)


def test_tracked_overrides_file_parses_to_nothing() -> None:
    data = yaml.safe_load((ROOT / "schemas" / "resolution" / "overrides.yaml").read_text("utf-8"))
    assert parse_overrides(data) == Overrides()


def test_parse_overrides_accepts_both_entry_forms() -> None:
    parsed = parse_overrides(
        {"version": 1, "must_merge": [{"a": "y", "b": "x", "reason": "same"}], "must_not_merge": [["p", "q"]]}
    )
    assert parsed == Overrides(must_merge=(("x", "y"),), must_not_merge=(("p", "q"),))


@pytest.mark.parametrize(
    "data",
    [
        ["not", "a", "mapping"],
        {"must_merge": "x"},
        {"must_merge": [["only-one"]]},
        {"must_merge": [["x", "x"]]},
        {"must_merge": [["x", "y"]], "must_not_merge": [["y", "x"]]},
        {"merge": []},
    ],
)
def test_parse_overrides_rejects_bad_documents(data: object) -> None:
    with pytest.raises(KgragError) as caught:
        parse_overrides(data)
    assert caught.value.code is ErrorCode.CONFIGURATION_INVALID
