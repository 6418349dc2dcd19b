from datetime import date

import pytest

from kgrag_core.extraction.model import Modality
from kgrag_core.extraction.records import ClaimStatus
from kgrag_core.graph.model import Traversal, TraversalStep
from kgrag_core.graph_retrieval.evidence import GraphLine, gather_evidence, pack_context
from kgrag_core.graph_retrieval.router import QuestionKind
from kgrag_core.search import SearchHit
from tests.unit.test_graph_retrieval_doubles import InMemoryGraph


class WordCounter:
    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _capacity_history() -> InMemoryGraph:
    graph = InMemoryGraph()
    site = graph.add_entity("site_lej", "LEJ-2", "Site")
    graph.add_claim(
        site,
        "capacity_pallets",
        "18,000",
        "c_old",
        written=date(2023, 3, 1),
        status=ClaimStatus.SUPERSEDED,
        superseded_by="clm_new",
        claim_id="clm_old",
    )
    graph.add_claim(site, "capacity_pallets", "24,500", "c_new", written=date(2024, 6, 3), claim_id="clm_new")
    graph.add_claim(
        site,
        "capacity_pallets",
        "30,000",
        "c_plan",
        written=date(2024, 9, 1),
        status=ClaimStatus.NOT_A_FACT,
        modality=Modality.PLAN,
        claim_id="clm_plan",
    )
    graph.add_claim(site, "headcount", "85", "c_staff", written=date(2024, 1, 1), claim_id="clm_staff")
    return graph


def test_current_claim_comes_first_and_superseded_ones_are_marked_never_candidates() -> None:
    graph = _capacity_history()
    evidence = gather_evidence(
        Traversal(),
        graph.claims,
        question="What is the current pallet capacity of LEJ-2?",
        kind=QuestionKind.TEMPORAL,
        entity_weights={"site_lej": 1.0},
    )
    capacity = [line for line in evidence.lines if "capacity_pallets" in line.text]
    assert [line.chunk_ids[0] for line in capacity] == ["c_new", "c_plan", "c_old"]
    assert capacity[0].marks == ()
    assert "superseded" in capacity[2].marks and "superseded by '24,500' (written 2024-06-03)" in capacity[2].text
    assert "plan" in capacity[1].marks
    # The asked-about attribute outranks the other one, and the outdated chunk is never offered.
    assert evidence.lines[-1].chunk_ids == ("c_staff",)
    chunk_ids = [c.chunk_id for c in evidence.chunks]
    assert chunk_ids[0] == "c_new" and "c_old" not in chunk_ids
    assert [c.rank for c in evidence.chunks] == list(range(1, len(chunk_ids) + 1))


def test_relation_lines_carry_evidence_ids_labels_and_dates() -> None:
    graph = InMemoryGraph()
    team = graph.add_entity("t", "Routing", "Team")
    system = graph.add_entity("s", "Atlas", "System")
    edge = graph.add_edge(team, "OWNS", system, ["c1", "c2"], modality=Modality.PLAN, written=date(2024, 2, 1))
    evidence = gather_evidence(
        Traversal(steps=[TraversalStep(edge, 1, 0.4)]),
        [],
        question="Who owns Atlas?",
        kind=QuestionKind.ENTITY,
        entity_weights={},
    )
    (line,) = evidence.lines
    assert line.kind == "relation" and line.chunk_ids == ("c1", "c2") and line.marks == ("plan",)
    assert line.text.startswith("Routing OWNS Atlas (plan;") and "written 2024-02-01" in line.text
    assert "[c1, c2]" in line.text
    assert [c.chunk_id for c in evidence.chunks] == ["c1", "c2"]


def _hits(n: int, words: int) -> list[SearchHit]:
    return [SearchHit(f"h{i}", f"d{i}", "t", "u", "s", (), 0, 1, " ".join(["word"] * words), 1.0) for i in range(n)]


def test_one_budget_with_graph_lines_capped_at_their_share() -> None:
    lines = [GraphLine(" ".join(["fact"] * 40), "claim", (f"c{i}",), 1.0) for i in range(20)]
    pack = pack_context(lines, _hits(20, 100), budget_tokens=1000, counter=WordCounter(), line_share=0.25)
    assert pack.line_tokens <= 250 and len(pack.lines) == 6 and pack.lines_left_out == 14
    assert pack.line_tokens + pack.chunk_tokens <= 1000
    assert len(pack.hits) == 7  # what the lines did not use goes to chunks
    # No lines: chunks may use the whole budget.
    alone = pack_context([], _hits(20, 100), budget_tokens=1000, counter=WordCounter())
    assert alone.chunk_tokens == 1000 and alone.hits_left_out == 10


def test_budget_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="budget_tokens"):
        pack_context([], [], budget_tokens=0, counter=WordCounter())
