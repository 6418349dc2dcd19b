from collections.abc import Mapping, Sequence

from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.graph.light import LightGraphReads
from kgrag_core.graph.model import Edge, EntityRef, EntitySummary
from kgrag_core.graph_retrieval.linking import (
    candidate_spans,
    link_entities,
    linked_entity_ids,
    passage_seeds,
    seed_entities,
)
from tests.unit.test_graph_retrieval_doubles import PUBLIC, SECRET, InMemoryGraph

VISIBLE = [PUBLIC.acl_class_id]


def _graph() -> InMemoryGraph:
    graph = InMemoryGraph()
    kestrel = graph.add_entity("org_k", "Kestrel Pharma", "Organization", aliases=["Kestrel"])
    site = graph.add_entity("site_lej", "Leipzig warehouse", "Site", aliases=["LEJ-2"])
    team = graph.add_entity("team_r", "Routing", "Team")
    his = graph.add_entity("sys_his", "HIS", "System", aliases=["his"])
    atlas_sys = graph.add_entity("sys_atlas", "Atlas", "System")
    atlas_prj = graph.add_entity("prj_atlas", "Atlas", "Project")
    hidden = graph.add_entity("org_h", "Hidden Holdings", "Organization")
    graph.add_edge(kestrel, "SERVED_AT", site, ["c1"])
    graph.add_edge(team, "OWNS", atlas_sys, ["c2"])
    graph.add_edge(team, "OWNS", atlas_prj, ["c3"])
    graph.add_edge(team, "USES", atlas_sys, ["c4"])
    graph.add_edge(team, "USES", his, ["c5"])
    graph.add_edge(hidden, "CUSTOMER_OF", kestrel, ["c6"], acl=SECRET.acl_class_id)
    return graph


def test_spans_cover_codes_quotes_and_capitalised_runs_but_not_question_words() -> None:
    spans = {
        (s.text, s.kind) for s in candidate_spans('Did Kestrel Pharma\'s EDI feed hit INC-2024-007 or "night shift"?')
    }
    assert {("Kestrel Pharma", "name"), ("EDI", "name"), ("INC-2024-007", "code"), ("night shift", "quoted")} <= spans
    assert not {t for t, _ in spans} & {"Did", "Pharma's", "Kestrel Pharma's EDI"}


def test_linking_prefers_the_longest_span_and_resolves_codes() -> None:
    links = link_entities("How many pallets does Kestrel Pharma use at LEJ-2?", _graph(), VISIBLE)
    assert [(lm.mention.text, [c.entity.entity.entity_id for c in lm.candidates]) for lm in links] == [
        ("Kestrel Pharma", ["org_k"]),
        ("LEJ-2", ["site_lej"]),
    ]
    code = links[1].candidates[0]
    assert code.via == "alias" and code.score > links[0].candidates[0].score * 0.99  # codes are deliberate


def test_ambiguity_is_kept_with_scores() -> None:
    links = link_entities("Who owns Atlas?", _graph(), VISIBLE)
    assert len(links) == 1 and links[0].ambiguous
    candidates = links[0].candidates
    assert {c.entity.entity.entity_id for c in candidates} == {"sys_atlas", "prj_atlas"}
    # The better-connected namesake ranks first, but an ambiguous span scores below an unambiguous one.
    assert candidates[0].entity.entity.entity_id == "sys_atlas" and candidates[0].score > candidates[1].score
    single = link_entities("Who leads Routing?", _graph(), VISIBLE)[0].candidates[0].score
    assert candidates[0].score < single


def test_pronouns_and_wrongly_capitalised_one_word_aliases_never_link() -> None:
    graph = _graph()
    assert link_entities("What is his role at Routing?", graph, VISIBLE)[0].mention.text == "Routing"
    assert all(lm.mention.text != "His" for lm in link_entities("His team uses it.", graph, VISIBLE))
    assert [
        lm.candidates[0].entity.entity.entity_id for lm in link_entities("Does HIS log pings?", graph, VISIBLE)
    ] == ["sys_his"]


def test_entities_only_visible_through_unreadable_evidence_do_not_link() -> None:
    assert link_entities("Tell me about Hidden Holdings", _graph(), VISIBLE) == []
    assert (
        link_entities("Tell me about Hidden Holdings", _graph(), None)[0].candidates[0].entity.entity.entity_id
        == "org_h"
    )


def test_embedding_hook_links_paraphrases_through_the_acl_checked_reader() -> None:
    calls: list[str] = []

    def search(name: str) -> list[tuple[str, float]]:
        calls.append(name)
        return [("org_h", 0.99), ("team_r", 0.9), ("org_k", 0.5)]

    links = link_entities("What does the Route Planning Group own?", _graph(), VISIBLE, embedding_search=search)
    assert "Route Planning Group" in calls
    ids = [c.entity.entity.entity_id for lm in links for c in lm.candidates]
    # org_h is not visible to this caller; org_k is below the similarity floor.
    assert ids == ["team_r"] and links[0].candidates[0].via == "embedding"


def test_seed_entities_keep_each_entity_once_at_its_best_score() -> None:
    links = link_entities("Does Kestrel Pharma or Kestrel use LEJ-2?", _graph(), VISIBLE)
    seeds = seed_entities(links)
    assert [s.entity.entity_id for s, _ in seeds].count("org_k") == 1
    assert [score for _, score in seeds] == sorted((score for _, score in seeds), reverse=True)


def test_passage_seeds_take_the_best_connected_reading_skip_the_edgeless_and_rank_shared_names_first() -> None:
    graph = _graph()
    graph.add_entity("org_lonely", "Lonely Corp", "Organization")  # known, but no edge leads anywhere from it
    passages = [
        "Atlas dropped stops; Routing was paged. Lonely Corp noticed.",
        "The Routing team fixed it the next day.",
    ]
    seeds = passage_seeds(passages, graph, VISIBLE, weight=0.5)
    named = [(s.entity.entity_id, score) for s, score in seeds]
    assert named[0] == ("team_r", 0.5)  # in both passages
    assert ("sys_atlas", 0.25) in named and "prj_atlas" not in {e for e, _ in named}  # one reading per mention
    assert "org_lonely" not in {e for e, _ in named}
    assert passage_seeds([], graph, VISIBLE, weight=0.5) == []


class _LightReads:
    """The in-memory graph with id-only name reads of its own, recording which names were read whole."""

    def __init__(self, graph: InMemoryGraph) -> None:
        self.graph = graph
        self.whole: list[str] = []

    def entity_ids_named(self, names: Sequence[str], acl: Sequence[str] | None) -> dict[str, list[str]]:
        found = self.graph.entities_named(names, acl)
        return {n: sorted({s.entity.entity_id for s in es}) for n, es in found.items()}

    def entity_refs_by_id(self, ids: Sequence[str], acl: Sequence[str] | None) -> dict[str, EntityRef]:
        return {i: s.entity for i, s in self.graph.entities_by_id(ids, acl).items()}

    def edges_among_named(
        self, named: Mapping[str, EntityRef], acl: Sequence[str] | None, *, limit: int = 50
    ) -> dict[str, list[Edge]]:
        return self.graph.edges_among(list(named), acl, limit=limit)

    def claims_of_named(self, named: Mapping[str, EntityRef], acl: Sequence[str] | None) -> list[ClaimRecord]:
        return self.graph.claims_of(list(named), acl)

    def entities_named(self, names: Sequence[str], acl: Sequence[str] | None) -> dict[str, list[EntitySummary]]:
        self.whole.extend(names)
        return self.graph.entities_named(names, acl)


def test_linked_ids_are_the_linked_entities_read_whole_only_for_one_word_names() -> None:
    texts = [
        "How many pallets does Kestrel Pharma use at LEJ-2?",
        "Who owns Atlas?",
        "What is his role at Routing?",
        "Does HIS log pings?",
        'Did "Hidden Holdings" buy from Kestrel Pharma?',
    ]
    for acl in (VISIBLE, [PUBLIC.acl_class_id, SECRET.acl_class_id]):
        for text in texts:
            light = _LightReads(_graph())
            expected = {e.entity.entity_id for e, _ in seed_entities(link_entities(text, _graph(), acl))}
            assert linked_entity_ids([text], light, acl) == expected  # type: ignore[arg-type]
            assert not {"kestrel pharma", "lej-2", "hidden holdings"} & set(light.whole)
    light = _LightReads(_graph())
    together = {e.entity.entity_id for t in texts for e, _ in seed_entities(link_entities(t, _graph(), VISIBLE))}
    assert linked_entity_ids(texts, light, VISIBLE) == together  # every text's names in one read
    light = _LightReads(_graph())
    assert isinstance(light, LightGraphReads)  # the light reads are the ones used
    assert linked_entity_ids(["Who owns Atlas?"], light, VISIBLE) == {"sys_atlas", "prj_atlas"}  # type: ignore[arg-type]
    assert light.whole == ["atlas"]  # a one-word name: its spelling is checked on the entities read whole
    # The restricted entity links only for its reader (positive control), in the light reads too.
    question = 'Did "Hidden Holdings" buy from Kestrel Pharma?'
    assert linked_entity_ids([question], _LightReads(_graph()), VISIBLE) == {"org_k"}  # type: ignore[arg-type]
    secret = [PUBLIC.acl_class_id, SECRET.acl_class_id]
    assert linked_entity_ids([question], _LightReads(_graph()), secret) == {"org_k", "org_h"}  # type: ignore[arg-type]
