"""The GLOBAL scale benchmark's synthetic evidence and report, on a tiny graph (no timing is asserted: the numbers
live in docs/benchmarks.md)."""

from __future__ import annotations

from kgrag_core.answering.sentences import split_sentences
from kgrag_core.graph_retrieval.linking import candidate_spans
from kgrag_runtime.benchmarks.communities import planted_graph
from kgrag_runtime.benchmarks.global_scale import chunk_texts, entity_name, markdown
from kgrag_runtime.benchmarks.graph import GraphShape


def test_every_relation_is_a_sentence_of_its_evidence_chunk_naming_both_ends_linkably() -> None:
    graph = planted_graph(GraphShape(entities=300, seed=5))
    texts = chunk_texts(graph)
    assert texts == chunk_texts(graph)  # deterministic
    index = {e: n for n, e in enumerate(graph.entity_ids)}
    ends = {rid: (s, o) for rid, s, _, o in graph.relations}
    for rid, chunk_id in graph.evidence:
        s, o = (entity_name(graph, index[e]) for e in ends[rid])
        sentences = [x.text for x in split_sentences(texts[chunk_id])]
        assert any(f'"{s}"' in x and f'"{o}"' in x for x in sentences)
    # The linker finds the quoted names in a passage (capitalised runs alone would miss "Person 12").
    some = next(iter(texts.values()))
    spans = {m.text for m in candidate_spans(some) if m.kind == "quoted"}
    assert spans and all(name.split()[-1].isdigit() for name in spans)


def test_the_report_has_one_row_per_size() -> None:
    row = {
        "entities": 10000,
        "relations": 31311,
        "build": {"level0": 101},
        "hybrid": {"p50_ms": 40.0, "p95_ms": 80.0},
        "global": {"p50_ms": 400.0, "p95_ms": 900.0},
        "global_named_again": {"p50_ms": 700.0, "p95_ms": 1400.0, "themes_mean": 4.5, "time_budget_cut": 2},
        "global_far_ends": {"p50_ms": 1500.0, "p95_ms": 3000.0, "themes_mean": 4.0, "time_budget_cut": 3},
        "global_over_hybrid_p50": 10.0,
        "themes_mean": 5.5,
        "communities_read_mean": 14.0,
        "time_budget_cut": 0,
        "asks": 20,
        "listing": {"batched_s": 3.1, "per_id_s": 40.2, "listed": 50.0},
        "load_average": 6.0,
    }
    big = {k: v for k, v in row.items() if k not in ("listing", "global_far_ends")}  # --no-far-ends
    text = markdown({"sizes": [row, {**big, "entities": 100000}]})
    lines = [line for line in text.splitlines() if line.startswith("| 1")]
    assert len(lines) == 2
    assert "| 400.0 / 900.0 |" in lines[0] and "3.1 (40.2)" in lines[0] and "not timed" in lines[1]
    assert "| 700.0 / 1400.0 (4.5, 2) |" in lines[0] and "1500.0 / 3000.0 (4.0, 3)" in lines[0]
    assert "| – / – (–, –) |" in lines[1]
