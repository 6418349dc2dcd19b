"""The entity page's view model: timelines, relation groups and graph elements from the API's JSON."""

from typing import Any

from kgrag_query_api.ui.entity_view import graph_view, mark_of, relation_groups, timelines


def _claim(attribute: str, value: str, status: str, written: str, **extra: Any) -> dict[str, Any]:
    return {
        "claim_id": f"clm_{attribute}_{value}",
        "attribute": attribute,
        "value": value,
        "status": status,
        "modality": extra.pop("modality", "fact"),
        "polarity": extra.pop("polarity", "positive"),
        "written_at": written,
        "valid_from": extra.pop("valid_from", None),
        "valid_to": None,
        "quote": f"{attribute}: {value}",
        "doc_id": "doc-1",
        "chunk_id": "ch_1",
        "confidence": 0.9,
        **extra,
    }


def _ref(entity_id: str, name: str, kind: str = "System") -> dict[str, str]:
    return {"entity_id": entity_id, "name": name, "type": kind}


def test_marks_name_plans_and_negations_the_api_calls_not_a_fact() -> None:
    assert mark_of(_claim("a", "x", "current", "2024-01-01")) == "current"
    assert mark_of(_claim("a", "x", "not_a_fact", "2024-01-01", modality="plan")) == "plan"
    assert mark_of(_claim("a", "x", "not_a_fact", "2024-01-01", polarity="negative")) == "negated"
    assert mark_of(_claim("a", "x", "not_a_fact", "2024-01-01", modality="reported")) == "not_a_fact"


def test_timelines_order_by_validity_and_put_conflicts_first() -> None:
    claims = [
        _claim("owner", "Kenji", "current", "2024-09-02"),
        _claim("owner", "José", "superseded", "2023-01-10"),
        _claim("sla", "99.9%", "conflict", "2025-06-03"),
        _claim("sla", "99.5%", "conflict", "2025-06-03"),
        _claim("db", "Spanner", "not_a_fact", "2025-01-01", modality="plan", valid_from="2026-01-01"),
    ]
    out = timelines(claims)
    assert [t.attribute for t in out] == ["sla", "db", "owner"]
    assert out[0].has_conflict and not out[2].has_conflict
    assert [e.value for e in out[2].entries] == ["José", "Kenji"]
    assert [e.mark for e in out[2].entries] == ["superseded", "current"]
    assert out[1].entries[0].mark == "plan" and out[1].entries[0].valid_from == "2026-01-01"


def test_relation_groups_split_direction_and_sum_evidence() -> None:
    rels = [
        {
            "relation_id": "r1",
            "subject": _ref("e1", "Routing", "Team"),
            "relation": "OWNS",
            "object": _ref("e0", "Atlas"),
            "evidence_count": 2,
        },
        {
            "relation_id": "r2",
            "subject": _ref("e0", "Atlas"),
            "relation": "DEPENDS_ON",
            "object": _ref("e2", "Beacon"),
            "evidence_count": 1,
        },
        {
            "relation_id": "r3",
            "subject": _ref("m1", "Atlas svc"),
            "relation": "DEPENDS_ON",
            "object": _ref("e3", "Core"),
            "evidence_count": 4,
        },
    ]
    groups = relation_groups("e0", ["m1"], rels)
    assert [(g.relation, g.evidence_count) for g in groups] == [("DEPENDS_ON", 5), ("<- OWNS", 2)]
    assert [r.other_name for r in groups[0].rows] == ["Core", "Beacon"]
    assert groups[1].rows[0].direction == "in" and groups[1].rows[0].other_id == "e1"


def test_graph_view_marks_hubs_the_walk_stopped_at_and_keeps_truncation() -> None:
    answer = {
        "entity": {**_ref("e0", "Atlas"), "is_hub": False},
        "edges": [
            {
                "relation_id": "r1",
                "subject": _ref("e1", "Routing", "Team"),
                "relation": "OWNS",
                "object": _ref("e0", "Atlas"),
                "evidence_count": 2,
                "depth": 1,
            },
            {
                "relation_id": "r2",
                "subject": _ref("e0", "Atlas"),
                "relation": "RUNS_ON",
                "object": _ref("e9", "Kubernetes"),
                "evidence_count": 1,
                "depth": 1,
            },
            {
                "relation_id": "r3",
                "subject": _ref("e1", "Routing", "Team"),
                "relation": "PART_OF",
                "object": _ref("e5", "Platform", "Team"),
                "evidence_count": 1,
                "depth": 2,
            },
        ],
        "truncated": ["hub not passed: Kubernetes", "limit"],
    }
    view = graph_view(answer)
    by_id = {n["id"]: n for n in view.nodes}
    assert set(by_id) == {"e0", "e1", "e9", "e5"}
    assert by_id["e0"]["centre"] is True and by_id["e5"]["depth"] == 2
    assert view.hubs == ["Kubernetes"] and by_id["e9"]["hub"] and not by_id["e1"]["hub"]
    assert view.truncated == ["hub not passed: Kubernetes", "limit"]
    assert view.relation_types == ["OWNS", "PART_OF", "RUNS_ON"]
    elements = view.elements()
    assert sum(1 for e in elements if e["group"] == "edges") == 3
    assert {"source": "e1", "target": "e0"}.items() <= elements[4]["data"].items()
