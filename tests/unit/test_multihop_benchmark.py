"""The multi-hop benchmark's bookkeeping: which questions it reads, how it scores and tabulates them."""

from __future__ import annotations

from collections import Counter

from kgrag_runtime.benchmarks.multihop import (
    CONFIGS,
    QUESTION_FILES,
    TEXT_GRAPH,
    load_questions,
    multihop_markdown,
    parse_variants,
    score,
    summarise,
)


def test_it_reads_both_sets_and_only_answerable_questions() -> None:
    questions = load_questions(QUESTION_FILES)
    kinds = Counter(q.kind for q in questions)
    assert kinds["bridge"] == 50 and kinds["chain4"] == 30
    northwind = [q for q in questions if q.kind == "northwind"]
    assert northwind and all(q.gold for q in northwind)
    assert {q.split for q in questions} == {"dev", "test"}
    assert any(not q.entity_heavy for q in questions if q.type == "multi_hop")


def test_scores_count_gold_passages_in_the_first_k_documents() -> None:
    gold = {"a": 1, "b": 1, "c": 2}
    got = score(["x", "a", "y", "z", "c", "b"], gold)
    assert got["recall@2"] == 1 / 3 and got["recall@5"] == 2 / 3 and got["recall@10"] == 1.0
    assert got["all_gold@5"] == 0.0 and score(["c", "b", "a"], gold)["all_gold@5"] == 1.0


def test_the_table_compares_the_text_graph_with_hybrid_per_split() -> None:
    questions = [q for q in load_questions(QUESTION_FILES) if q.kind in ("bridge", "lookup")]
    bridges = [q.id for q in questions if q.kind == "bridge" and q.split == "test"]
    per_question = {c: {q.id: score([], q.gold) for q in questions} for c in CONFIGS}
    won = next(q for q in questions if q.id == bridges[0])
    per_question[TEXT_GRAPH][won.id] = score(list(won.gold), won.gold)  # the walk found every hop there
    tables = summarise(questions, per_question, ["dev", "test"])
    bridge = tables["test"]["bridge"]
    assert isinstance(bridge, dict) and bridge["questions"] == len(bridges)
    assert bridge["sign_test_recall@5"]["wins"] == 1 and bridge["sign_test_recall@5"]["losses"] == 0
    assert bridge["metrics"][TEXT_GRAPH]["recall@5"] > bridge["metrics"]["hybrid"]["recall@5"] == 0.0
    assert "bridge" not in tables["dev"] or tables["dev"]["bridge"]["sign_test_recall@5"]["wins"] == 0
    result = {
        "machine": "m",
        "load_average_start": (1.0, 1.0, 1.0),
        "documents": 3,
        "ingest_s": 1.0,
        "questions": {"dev": 1, "test": 1},
        "configs": list(CONFIGS),
        "latency_ms": {c: {"p50": 1.0, "p95": 2.0} for c in CONFIGS},
        "text_graph_usage": {TEXT_GRAPH: {"used": 1, "lookup": 2}},
        "tables": tables,
    }
    shown = multihop_markdown(result)
    assert "| bridge |" in shown and "1 wins, 0 losses" in shown and f"{TEXT_GRAPH}: lookup 2, used 1" in shown


def test_variants_keep_ints_floats_and_words() -> None:
    got = parse_variants(["max_hops=4,walk_weight=0.5,bridge_order=rank"])
    assert got == {
        "tg[max_hops=4,walk_weight=0.5,bridge_order=rank]": {"max_hops": 4, "walk_weight": 0.5, "bridge_order": "rank"}
    }
    assert isinstance(got["tg[max_hops=4,walk_weight=0.5,bridge_order=rank]"]["max_hops"], int)
