"""Namesakes inside one extracted entity: resolution keeps apart the documents whose mentions of a name stand
for another thing, and leaves together those that agree or say nothing new (kgrag_core.resolution.senses)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgrag_core.graph.model import DecisionKind, DocumentProfile, EntityProfile, document_profile
from kgrag_core.resolution.constraints import Rule
from kgrag_core.resolution.resolver import Resolver
from kgrag_core.resolution.senses import plan_senses

ACME = "ent_acme"
CUSTOMER = (1.0, 0.0, 0.0)
VENDOR = (0.0, 1.0, 0.0)


def _doc(doc_id: str, *, attributes: Sequence[tuple[str, str]] = (), strong_ids: Sequence[tuple[str, str]] = (),
         mentions: int = 1, entity: str = ACME) -> DocumentProfile:  # fmt: skip
    profile = EntityProfile(
        entity, "Organization", "Acme", strong_ids=tuple(strong_ids), attributes=tuple(attributes), mentions=mentions
    )
    return document_profile(entity, doc_id, profile)


class _Contexts:
    """Context vectors by document (what the embedding of each document's text would give), counting calls."""

    def __init__(self, by_doc: Mapping[str, tuple[float, ...]]) -> None:
        self.by_doc = by_doc
        self.asked: list[str] = []

    def __call__(self, profiles: Sequence[EntityProfile]) -> dict[str, Sequence[float]]:
        self.asked.extend(p.entity_id for p in profiles)
        return {p.entity_id: self.by_doc[p.entity_id.split("@", 1)[1]] for p in profiles}


def test_namesakes_whose_attributes_and_contexts_disagree_are_kept_apart() -> None:
    docs = [
        _doc("orders-2024", attributes=[("industry", "retail")], mentions=3),
        _doc("supplier-audit", attributes=[("industry", "mining")]),
    ]
    contexts = _Contexts({"orders-2024": CUSTOMER, "supplier-audit": VENDOR})
    [split] = plan_senses(Resolver(), docs, contexts)
    assert split.from_id == ACME and split.doc_ids == ("supplier-audit",)
    assert split.basis.kind is DecisionKind.REVIEW  # left apart, and a person is asked
    assert dict(split.basis.features)["attributes"] == 0.0 and dict(split.basis.features)["context"] == 0.0


def test_mentions_of_one_thing_stay_one_entity() -> None:
    """Positive controls: agreeing attributes, or conflicting ones the context corroborates, merge."""
    agreeing = [
        _doc("orders-2024", attributes=[("industry", "retail")], mentions=3),
        _doc("orders-2025", attributes=[("industry", "retail")]),
    ]
    assert plan_senses(Resolver(), agreeing, _Contexts({"orders-2024": CUSTOMER, "orders-2025": VENDOR})) == []
    moved = [
        _doc("orders-2024", attributes=[("office", "Leipzig")], mentions=3),
        _doc("orders-2025", attributes=[("office", "Berlin")]),
    ]
    contexts = _Contexts({"orders-2024": CUSTOMER, "orders-2025": CUSTOMER})
    assert plan_senses(Resolver(), moved, contexts) == []
    assert contexts.asked  # the disagreement was weighed, and the context decided


def test_a_document_that_says_nothing_new_joins_without_a_comparison() -> None:
    docs = [_doc("a", attributes=[("industry", "retail")], mentions=2), _doc("b"), _doc("c")]
    contexts = _Contexts({})
    assert plan_senses(Resolver(), docs, contexts) == []
    assert contexts.asked == []  # no embedding spent on a plain repeat of the name


def test_conflicting_strong_identifiers_split_without_a_score() -> None:
    email = ("email", "ops@acme.example")
    docs = [
        _doc("crm-1", strong_ids=[email, ("tax_id", "DE-1")], mentions=2),
        _doc("crm-2", strong_ids=[email, ("tax_id", "FR-9")]),
        _doc("crm-3", strong_ids=[email]),
    ]
    contexts = _Contexts({})
    [split] = plan_senses(Resolver(), docs, contexts)
    assert split.doc_ids == ("crm-2",) and split.basis.rule == f"{Rule.CONFLICTING_STRONG_IDS}:tax_id"
    assert split.basis.kind is DecisionKind.SEPARATE and contexts.asked == []


def test_a_later_namesake_joins_the_sense_it_agrees_with_and_entities_are_judged_alone() -> None:
    docs = [
        _doc("orders-2024", attributes=[("industry", "retail")], mentions=3),
        _doc("supplier-audit", attributes=[("industry", "mining")], mentions=2),
        _doc("supplier-2025", attributes=[("industry", "mining")]),
        _doc("other-1", entity="ent_other", attributes=[("industry", "retail")]),
    ]
    contexts = _Contexts({"orders-2024": CUSTOMER, "supplier-audit": VENDOR, "supplier-2025": VENDOR})
    [split] = plan_senses(Resolver(), docs, contexts)
    assert split.doc_ids == ("supplier-2025", "supplier-audit")  # one sense for the vendor, not two
