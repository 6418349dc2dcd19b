"""Cluster naming and summaries, shared by every GraphReader adapter."""

from __future__ import annotations

from kgrag_core.graph.clusters import MemberRow, cluster_views, summaries


def row(entity_id: str, name: str, *, visible: bool = True, type_: str = "Person") -> MemberRow:
    return MemberRow(entity_id, name, type_, (("email", f"{entity_id}@x"),), visible)


def test_a_cluster_is_named_by_its_label_when_visible_else_by_its_commonest_visible_alias() -> None:
    members = {
        "p1": [row("p1", "Priya Raman"), row("p2", "P. Raman")],
        "d1": [row("d1", "Dana Lee", visible=False), row("d2", "D. Lee"), row("d3", "Dana L.")],
        "x1": [row("x1", "Hidden", visible=False)],
        "z1": [row("z2", "Zed", type_="Team"), row("z3", "Zed Team", type_="System", visible=False)],
    }
    views = cluster_views(members, {"d1": {"D. Lee": 1, "Dana L.": 3}})
    assert set(views) == {"p1", "d1", "z1"}  # nothing of x1 is visible
    assert views["p1"].ref.name == "Priya Raman" and views["p1"].members == ("p1", "p2")
    assert views["d1"].ref.name == "Dana L." and views["d1"].aliases == ("Dana L.", "D. Lee")
    assert views["d1"].strong_ids == (("email", "d2@x"), ("email", "d3@x"))  # never the invisible label's
    assert views["z1"].ref.name == "Zed" and views["z1"].ref.type == "System"  # no label row: the least type


def test_summaries_add_degree_and_hub_label() -> None:
    views = cluster_views({"p1": [row("p1", "Priya Raman")]}, {})
    [summary] = summaries(views, {"p1": 4}, {"p1"}).values()
    assert (summary.entity.name, summary.degree, summary.is_hub, summary.members) == ("Priya Raman", 4, True, ("p1",))
    assert summaries(views, {}, set())["p1"].degree == 0
