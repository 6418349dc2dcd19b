"""Cluster naming and summaries, shared by every GraphReader adapter."""

from __future__ import annotations

from kgrag_core.graph.clusters import MemberRow, cluster_views, summaries


def row(entity_id: str, name: str, *, visible: bool = True, type_: str = "Person") -> MemberRow:
    return MemberRow(entity_id, name, type_, (("email", f"{entity_id}@x"),), visible)


def test_a_cluster_shows_only_visible_members_ids_names_types_and_identifiers() -> None:
    members = {
        "p1": [row("p1", "Priya Raman"), row("p2", "P. Raman")],
        "d1": [row("d1", "Dana Lee", visible=False), row("d3", "Dana L."), row("d2", "D. Lee")],
        "x1": [row("x1", "Hidden", visible=False)],
        "z1": [row("z1", "Zed Secret", type_="System", visible=False), row("z2", "Zed", type_="Team")],
    }
    views = cluster_views(members, {"p1": {"Priya Raman": 2, "P. Raman": 1}, "d1": {"D. Lee": 1, "Dana L.": 3}})
    assert set(views) == {"p1", "d1", "z1"}  # nothing of x1 is visible
    # A visible label keeps its id and its name.
    assert (views["p1"].ref.entity_id, views["p1"].ref.name) == ("p1", "Priya Raman")
    assert views["p1"].members == ("p1", "p2")
    # An invisible label is never shown: the cluster goes by its smallest visible member, under that member's
    # name as visible mentions spell it, with the visible members' identifiers only.
    assert (views["d1"].ref.entity_id, views["d1"].ref.name) == ("d2", "D. Lee")
    assert views["d1"].aliases == ("Dana L.", "D. Lee") and views["d1"].members == ("d2", "d3")
    assert views["d1"].strong_ids == (("email", "d2@x"), ("email", "d3@x"))  # never the invisible label's
    assert (views["z1"].ref.entity_id, views["z1"].ref.type) == ("z2", "Team")  # never the invisible type


def test_a_stored_name_no_visible_mention_spells_is_never_shown() -> None:
    """Two records share an e-mail, so one entity row; it stores the restricted record's name (first written)."""
    shared = [MemberRow("e1", "Jordan Blake", "Person", (), True)]
    public = cluster_views({"e1": shared}, {"e1": {"J. Blake": 1}})["e1"]
    assert public.ref.name == "J. Blake"
    insider = cluster_views({"e1": shared}, {"e1": {"J. Blake": 1, "jordan BLAKE": 2}})["e1"]
    assert insider.ref.name == "jordan BLAKE"  # positive control: the name as the caller's evidence spells it
    # Named only by relation or claim evidence (no mention): the stored name of a name-keyed entity.
    assert cluster_views({"e1": shared}, {})["e1"].ref.name == "Jordan Blake"


def test_summaries_flag_a_hub_only_by_the_callers_visible_degree() -> None:
    views = cluster_views({"p1": [row("p1", "Priya Raman")]}, {})
    [summary] = summaries(views, {"p1": 4}, {"p1": 4}).values()
    assert (summary.entity.name, summary.degree, summary.is_hub, summary.members) == ("Priya Raman", 4, True, ("p1",))
    assert not summaries(views, {"p1": 3}, {"p1": 4})["p1"].is_hub  # labelled, but the caller sees 3 edges
    assert not summaries(views, {"p1": 4}, {})["p1"].is_hub  # not labelled
    assert summaries(views, {}, {})["p1"].degree == 0
