from kgrag_core.retrieval.fusion import reciprocal_rank_fusion
from kgrag_core.search import RouteHit


def hits(*ids: str) -> list[RouteHit]:
    return [RouteHit(chunk_id=c, score=1.0, rank=i) for i, c in enumerate(ids, start=1)]


def test_rrf_scores_are_sum_of_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion({"dense": hits("a", "b"), "bm25": hits("b", "c")}, k=60)
    scores = {c.chunk_id: c.score for c in fused}
    assert scores["b"] == 1 / 62 + 1 / 61
    assert scores["a"] == 1 / 61
    assert scores["c"] == 1 / 62
    assert [c.chunk_id for c in fused] == ["b", "a", "c"]
    assert fused[0].ranks == {"dense": 2, "bm25": 1}


def test_ties_break_by_chunk_id_whatever_the_input_order() -> None:
    one = reciprocal_rank_fusion({"dense": hits("z", "y"), "bm25": hits("y", "z")})
    two = reciprocal_rank_fusion({"bm25": hits("y", "z"), "dense": hits("z", "y")})
    assert [c.chunk_id for c in one] == ["y", "z"] == [c.chunk_id for c in two]
    assert one[0].score == one[1].score


def test_duplicate_in_one_route_counts_once_at_best_rank() -> None:
    fused = reciprocal_rank_fusion({"dense": hits("a", "a", "b")})
    assert {c.chunk_id: c.ranks["dense"] for c in fused} == {"a": 1, "b": 3}
    assert fused[0].score == 1 / 61


def test_weights_scale_routes() -> None:
    fused = reciprocal_rank_fusion({"dense": hits("a"), "bm25": hits("b")}, weights={"bm25": 2.0})
    assert [c.chunk_id for c in fused] == ["b", "a"]


def test_empty_routes_give_nothing() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"dense": []}) == []
