"""Bounded write batches for a projection scope too large for one Neo4j transaction."""

from __future__ import annotations

import pytest

from kgrag_adapters.neo4j.write_batches import bounded_batches, entity_cost, row_cost, scope_cost, split_entity_row


def _entity(docs: int, aliases: int) -> dict[str, object]:
    return {
        "entity_id": "ent_hub",
        "canonical_id": "ent_hub",
        "type": "Organization",
        "docs": [f"doc-{i}" for i in range(docs)],
        "aliases": [{"norm": f"n{i}"} for i in range(aliases)],
    }


def test_batches_stay_within_the_limit_and_keep_every_row_in_order() -> None:
    rows = [{"props": {"ev_chunk": ["c"] * n}} for n in (0, 5, 30, 0, 200, 0, 0)]  # costs 1, 1, 4, 1, 21, 1, 1
    batches = list(bounded_batches(rows, row_cost, 5))
    assert [r for b in batches for r in b] == rows
    assert [[row_cost(r) for r in b] for b in batches] == [[1, 1], [4, 1], [21], [1, 1]]  # 21 alone: one row
    assert all(sum(map(row_cost, b)) <= 5 for b in batches if len(b) > 1)
    assert list(bounded_batches([], row_cost, 5)) == []


def test_a_hub_entity_row_is_split_into_pieces_that_carry_its_properties() -> None:
    hub = _entity(docs=9, aliases=3)
    assert entity_cost(hub) == 13
    pieces = split_entity_row(hub, 5)
    assert all(entity_cost(p) <= 5 for p in pieces) and len(pieces) == 3
    assert [d for p in pieces for d in p["docs"]] == hub["docs"]
    assert [a for p in pieces for a in p["aliases"]] == hub["aliases"]
    for piece in pieces:
        assert {k: v for k, v in piece.items() if k not in ("docs", "aliases")} == {
            "entity_id": "ent_hub",
            "canonical_id": "ent_hub",
            "type": "Organization",
        }
    small = _entity(docs=2, aliases=1)
    assert split_entity_row(small, 5) == [small]  # within the limit: the row itself
    with pytest.raises(ValueError, match="at least 2"):
        split_entity_row(hub, 1)


def test_scope_cost_counts_links_and_evidence() -> None:
    edges = [{"props": {"ev_chunk": ["c"] * 10}}] * 3
    assert scope_cost([_entity(4, 1)], edges, [{"props": {}}]) == 6 + 6 + 1
