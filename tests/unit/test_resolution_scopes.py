"""A merge resting on evidence some reader who sees both sides cannot read records the classes a reader must
hold to be shown it (kgrag_core.resolution.scopes, docs/security.md section 1); one every such reader can
verify records none."""

from __future__ import annotations

from kgrag_core.graph.model import EntityProfile, ScopedEvidence
from kgrag_core.resolution.resolver import Resolver

PUBLIC, HR = "acl_public", "acl_hr"
USER = ("user_id", "dana.okafor")
EMAIL = ("email", "dana.lee@northwind.example")


def _person(
    entity_id: str, name: str, strong_ids: tuple[tuple[str, str], ...], *scopes: ScopedEvidence
) -> EntityProfile:
    return EntityProfile(entity_id, "Person", name, strong_ids=strong_ids, scopes=scopes)


def _merge_basis(*profiles: EntityProfile) -> list[tuple[str, tuple[str, ...]]]:
    [record] = Resolver().resolve(list(profiles)).merges
    return [(d.rule, d.requires) for d in record.basis]


def test_a_merge_only_a_restricted_record_ties_needs_every_class_of_its_evidence() -> None:
    okafor = _person("ent_a", "Dana Okafor", (USER,), ScopedEvidence(PUBLIC, ("Dana Okafor",), (USER,)))
    lee = _person(
        "ent_b",
        "Dana Lee",
        (EMAIL, USER),
        ScopedEvidence(PUBLIC, ("Dana Lee",), (EMAIL,)),
        ScopedEvidence(HR, ("Dana Lee",), (EMAIL, USER)),  # only HR's record carries the shared user id
    )
    assert _merge_basis(okafor, lee) == [("shared_strong_id", (HR, PUBLIC))]


def test_a_merge_public_evidence_supports_needs_nothing() -> None:
    """Positive controls: the shared id in public evidence too, or names that merge on their own."""
    okafor = _person("ent_a", "Dana Okafor", (USER,), ScopedEvidence(PUBLIC, ("Dana Okafor",), (USER,)))
    lee = _person(
        "ent_b",
        "Dana Lee",
        (EMAIL, USER),
        ScopedEvidence(PUBLIC, ("Dana Lee",), (EMAIL, USER)),
        ScopedEvidence(HR, ("Dana Lee",), (EMAIL, USER)),
    )
    assert _merge_basis(okafor, lee) == [("shared_strong_id", ())]
    priya = _person(
        "ent_c",
        "Priya Raman",
        (),
        ScopedEvidence(PUBLIC, ("Priya Raman",)),
        ScopedEvidence(HR, ("Priya Raman",)),
    )
    p_raman = _person("ent_d", "P. Raman", (), ScopedEvidence(PUBLIC, ("P. Raman",)))
    assert _merge_basis(priya, p_raman) == [("score_at_or_above_high", ())]


def test_profiles_without_scoped_evidence_are_one_scope() -> None:
    a, b = _person("ent_a", "Dana Okafor", (USER,)), _person("ent_b", "Dana Lee", (EMAIL, USER))
    assert _merge_basis(a, b) == [("shared_strong_id", ())]
