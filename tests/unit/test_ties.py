from kgrag_core.retrieval.ties import top_k_breaking_ties_by_id


def test_fetches_past_a_tie_that_straddles_the_cut_off() -> None:
    engine = [("z", 0.9), ("d", 0.5), ("c", 0.5), ("b", 0.5), ("a", 0.5), ("e", 0.1)]
    sizes: list[int] = []

    def fetch(n: int) -> list[tuple[str, float]]:
        sizes.append(n)
        return engine[:n]

    hits = top_k_breaking_ties_by_id(fetch, 2, 100)
    assert [(h.chunk_id, h.rank) for h in hits] == [("z", 1), ("a", 2)]  # "a" wins the tie by ID, not "d"
    assert sizes == [3, 6]


def test_stops_at_the_maximum_fetch() -> None:
    sizes: list[int] = []

    def fetch(n: int) -> list[tuple[str, float]]:
        sizes.append(n)
        return [(f"c{i:03d}", 1.0) for i in range(n)]

    hits = top_k_breaking_ties_by_id(fetch, 3, 10)
    assert sizes == [4, 8, 10]
    assert [h.chunk_id for h in hits] == ["c000", "c001", "c002"]
