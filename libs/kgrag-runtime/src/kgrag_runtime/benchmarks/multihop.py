"""Multi-hop retrieval: BM25, dense, hybrid and hybrid + text graph on the multi-hop set and Northwind.

One embedded index (a fresh data directory) of `corpora/multihop/documents.jsonl` and the bundled Northwind
documents; every answerable question of `corpora/multihop/questions.jsonl` and the two Northwind question
files is searched in each configuration, and each ranking (documents in the order their first chunk
appears) is scored by recall@2/5/10 and all-gold@5 against the question's gold passages. Rows: each kind of
the multi-hop set, every `multi_hop` and every `lookup` question of both sets, and the multi-hop questions
that do or do not name an entity; per split, since only dev may be tuned on. Hybrid + text graph is
compared with hybrid question by question (wins, losses, the exact sign test) and search latency is given
as p50/p95 per configuration, all in the same run.

    uv run python -m kgrag_runtime.benchmarks.multihop --out bench-results/multihop
    uv run python -m kgrag_runtime.benchmarks.multihop --split dev --no-text-graph
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from kgrag_adapters.connectors import iter_path
from kgrag_core.acl import Caller
from kgrag_core.connectors import ConnectorItem
from kgrag_core.evaluation.metrics import all_gold_at, mean, recall_at, sign_test, unique_docs
from kgrag_core.evaluation.questions import parse_questions
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_core.search import SearchResponse
from kgrag_core.text_graph.model import TextGraphSettings
from kgrag_core.text_graph.searcher import TEXT_GRAPH_MODE
from kgrag_runtime.app import KgragApp
from kgrag_runtime.benchmarks.runner import _machine
from kgrag_runtime.evaluation.runner import _percentiles
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

CORPORA = Path(__file__).resolve().parents[5] / "corpora"
QUESTION_FILES = (
    CORPORA / "multihop" / "questions.jsonl",
    CORPORA / "northwind" / "questions.jsonl",
    CORPORA / "northwind" / "questions-test.jsonl",
)
CORPUS_FILES = (CORPORA / "multihop" / "documents.jsonl", CORPORA / "northwind" / "documents.jsonl")
TEXT_GRAPH = TEXT_GRAPH_MODE
# The walk on every question, lookups included (the router's choice left out): what the walk itself adds.
UNROUTED = "text_graph_unrouted"
CONFIGS = ("bm25", "dense", "hybrid", TEXT_GRAPH, UNROUTED)
METRICS = ("recall@2", "recall@5", "recall@10", "all_gold@5")
DEPTH = 10


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    question: str
    type: str
    kind: str  # the multi-hop set's kind; "northwind" for the bundled questions
    entity_heavy: bool
    split: str
    gold: dict[str, int]
    caller: Caller


def _of_kind(kind: str) -> Callable[[Question], bool]:
    return lambda q: q.kind == kind


# The rows of the table, each a predicate over a question; kinds of the multi-hop set first.
GROUPS: dict[str, Callable[[Question], bool]] = {
    **{kind: _of_kind(kind) for kind in ("bridge", "comparison", "chain3", "chain4")},
    "multi-hop, names an entity": lambda q: q.type == "multi_hop" and q.entity_heavy,
    "multi-hop, names only a title": lambda q: q.type == "multi_hop" and not q.entity_heavy,
    "all multi-hop (both sets)": lambda q: q.type == "multi_hop",
    "northwind multi-hop": lambda q: q.type == "multi_hop" and q.kind == "northwind",
    "all lookups (both sets)": lambda q: q.type == "lookup",
    "all answerable": lambda q: True,
}


def load_questions(paths: Sequence[Path]) -> list[Question]:
    """The answerable questions of `paths` (an unanswerable one has no gold to recall)."""
    out: list[Question] = []
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        raw = {str(r["id"]): r for r in (json.loads(line) for line in lines if line.strip())}
        for q in parse_questions(lines):
            if not q.gold:
                continue
            extra = raw[q.id]
            out.append(
                Question(
                    q.id,
                    q.question,
                    q.type,
                    str(extra.get("kind", "northwind")),
                    bool(extra.get("entity_heavy", True)),
                    q.split or "test",
                    q.gold,
                    q.caller,
                )
            )
    return out


def _search(app: KgragApp, config: str, q: Question, walks: Mapping[str, TextGraphSettings]) -> SearchResponse:
    if config in walks and app.text_graph_searcher is not None:
        app.text_graph_searcher.settings = walks[config]
        if config != TEXT_GRAPH:  # the unrouted walk and its variants: the walk on every question
            return app.text_graph_searcher.search(q.question, q.caller, top_k=DEPTH, routed=False)
    if config == TEXT_GRAPH or config in walks:
        found = app.search(q.question, q.caller, top_k=DEPTH, graph=False, text_graph=True)
    else:
        found = app.search(q.question, q.caller, top_k=DEPTH, mode=SearchMode(config), graph=False, text_graph=False)
    assert isinstance(found, SearchResponse)
    return found


def score(ranked: Sequence[str], gold: dict[str, int]) -> dict[str, float]:
    return {
        "recall@2": recall_at(ranked, gold, 2),
        "recall@5": recall_at(ranked, gold, 5),
        "recall@10": recall_at(ranked, gold, 10),
        "all_gold@5": all_gold_at(ranked, gold, 5),
    }


def run_questions(
    app: KgragApp,
    questions: Sequence[Question],
    configs: Sequence[str],
    console: Console,
    walks: Mapping[str, TextGraphSettings] | None = None,
) -> dict[str, object]:
    """`walks`: the text-graph settings each text-graph configuration searches with (variants for tuning)."""
    per_question: dict[str, dict[str, dict[str, float]]] = {c: {} for c in configs}
    latency: dict[str, list[float]] = {c: [] for c in configs}
    # Per text-graph configuration: how many searches walked, degraded, and why the others did not walk.
    usage: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for q in questions[:3]:  # warm-up outside the timing: first calls load models and caches
        for config in configs:
            _search(app, config, q, walks or {})
    for n, q in enumerate(questions, start=1):
        for config in configs:
            started = time.perf_counter()
            found = _search(app, config, q, walks or {})
            latency[config].append((time.perf_counter() - started) * 1000)
            per_question[config][q.id] = score(unique_docs([h.doc_id for h in found.hits]), q.gold)
            info = found.limits.get("text_graph")
            if isinstance(info, dict):
                outcome = "degraded" if info.get("degraded") else "used" if info.get("used") else info.get("reason")
                usage[config][str(outcome)] += 1
        if n % 50 == 0:
            console.print(f"  {n}/{len(questions)} questions")
    return {
        "per_question": per_question,
        "latency_ms": {c: _percentiles(v) for c, v in latency.items()},
        "text_graph_usage": {c: dict(u) for c, u in usage.items()},
    }


def _ingest(app: KgragApp, items: Sequence[ConnectorItem], text_graph: bool, console: Console) -> None:
    console.print(f"Multi-hop benchmark: ingesting {len(items)} documents (text graph {text_graph})…")
    done = [0]

    def advance(n: int) -> None:  # a line per 500 documents: the ingest takes minutes on 2 cores
        before, done[0] = done[0], done[0] + n
        if before // 500 != done[0] // 500:
            console.print(f"  {done[0]}/{len(items)} documents")

    app.ingest(items, progress=advance)


def _walk_settings(app: KgragApp, variants: Mapping[str, Mapping[str, float | str]]) -> dict[str, TextGraphSettings]:
    """The text-graph searcher's settings per configuration: the built ones, and each variant's overrides."""
    if app.text_graph_searcher is None:
        return {}
    base = app.text_graph_searcher.settings
    return {TEXT_GRAPH: base, UNROUTED: base} | {name: replace(base, **over) for name, over in variants.items()}  # type: ignore[arg-type]


def parse_variants(specs: Sequence[str]) -> dict[str, dict[str, float | str]]:
    """`walk_weight=1.0,keep_head=1` -> {"tg[walk_weight=1.0,keep_head=1]": {...}}; ints stay ints, and a
    value that is no number stays a string (`bridge_order=rank`)."""
    out: dict[str, dict[str, float | str]] = {}
    for spec in specs:
        over: dict[str, float | str] = {}
        for pair in spec.split(","):
            key, _, value = pair.partition("=")
            over[key.strip()] = _number_or_text(value.strip())
        out[f"tg[{spec}]"] = over
    return out


def _number_or_text(value: str) -> float | str:
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        return float(value)
    except ValueError:
        return value


def summarise(
    questions: Sequence[Question], per_question: dict[str, dict[str, dict[str, float]]], splits: Sequence[str]
) -> dict[str, dict[str, object]]:
    """Per split and row: the mean of each metric per configuration, and hybrid + text graph against hybrid."""
    tables: dict[str, dict[str, object]] = {}
    for split in splits:
        rows: dict[str, object] = {}
        for group, member in GROUPS.items():
            ids = [q.id for q in questions if q.split == split and member(q)]
            if not ids:
                continue
            cells = {
                c: {m: round(mean([per_question[c][i][m] for i in ids]), 3) for m in METRICS} for c in per_question
            }
            row: dict[str, object] = {"questions": len(ids), "metrics": cells}
            if TEXT_GRAPH in per_question and "hybrid" in per_question:
                row["sign_test_recall@5"] = sign_test(
                    [per_question[TEXT_GRAPH][i]["recall@5"] for i in ids],
                    [per_question["hybrid"][i]["recall@5"] for i in ids],
                )
            rows[group] = row
        tables[split] = rows
    return tables


def run_multihop_benchmark(
    settings: KgragSettings,
    *,
    splits: Sequence[str],
    text_graph: bool,
    console: Console,
    extraction: bool = False,
    variants: Mapping[str, Mapping[str, float | str]] | None = None,
    data_dir: Path | None = None,
    question_files: Sequence[Path] = QUESTION_FILES,
    corpus_files: Sequence[Path] = CORPUS_FILES,
) -> dict[str, object]:
    """`variants`: more text-graph configurations, each a set of TextGraphSettings overrides of the unrouted
    walk (for tuning on dev: one index, many walks). `data_dir`: keep the index there and reuse it on the next run."""
    questions = [q for q in load_questions(question_files) if q.split in splits]
    configs = [*CONFIGS, *(variants or {})] if text_graph else list(CONFIGS[:3])
    with tempfile.TemporaryDirectory() as tmp:
        # Extraction off by default: no configuration here reads the knowledge graph, and tiers 0-2 on every
        # passage would triple the ingest.
        where = data_dir or Path(tmp)
        update = {"data_dir": where, "pg_dsn": None, "text_graph": text_graph, "extraction_enabled": extraction}
        with open_embedded(settings.model_copy(update=update)) as app:
            items = [item for path in corpus_files for item in iter_path(path)]
            marker = where / f"multihop-ingested-{text_graph}"
            started = time.perf_counter()
            if marker.is_file():
                console.print(f"Multi-hop benchmark: reusing the index in {where}")
            else:
                _ingest(app, items, text_graph, console)
                marker.write_text("done\n")
            ingest_s = time.perf_counter() - started
            console.print(f"  {len(questions)} questions × {len(configs)} configurations")
            load_start = os.getloadavg()
            walks = _walk_settings(app, variants or {})
            measured = run_questions(app, questions, configs, console, walks)
    per_question: dict[str, dict[str, dict[str, float]]] = measured["per_question"]  # type: ignore[assignment]
    return {
        "machine": _machine(),
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "documents": len(items),
        "ingest_s": round(ingest_s, 1),
        "questions": {s: sum(q.split == s for q in questions) for s in splits},
        "configs": list(configs),
        "latency_ms": measured["latency_ms"],
        "text_graph_usage": measured["text_graph_usage"],
        "tables": summarise(questions, per_question, splits),
        "per_question": per_question,
    }


def multihop_markdown(result: dict[str, object]) -> str:
    configs: list[str] = result["configs"]  # type: ignore[assignment]
    load = " / ".join(f"{v:.1f}" for v in result["load_average_start"])  # type: ignore[attr-defined]
    lines = [
        f"Machine: {result['machine']}; load average {load} at the start of the searches;"
        f" {result['documents']} documents ingested in {result['ingest_s']} s",
        "",
    ]
    tables: dict[str, dict[str, dict[str, object]]] = result["tables"]  # type: ignore[assignment]
    for split, rows in tables.items():
        lines += [
            f"**{split}** ({result['questions'][split]} answerable questions;"  # type: ignore[index]
            " recall@2 / recall@5 / recall@10 / all-gold@5)",
            "",
            "| row | n | "
            + " | ".join(configs)
            + (" | text graph vs hybrid, recall@5 |" if TEXT_GRAPH in configs else ""),
            "|---|---:|" + "---|" * len(configs) + ("---|" if TEXT_GRAPH in configs else ""),
        ]
        for group, row in rows.items():
            cells: dict[str, dict[str, float]] = row["metrics"]  # type: ignore[assignment]
            shown = [" / ".join(f"{cells[c][m]:.2f}" for m in METRICS) for c in configs]
            test = row.get("sign_test_recall@5")
            tail = (
                f" {test['wins']} wins, {test['losses']} losses, p = {test['p_value']:.3f} |"
                if isinstance(test, dict)
                else ""
            )
            lines.append(f"| {group} | {row['questions']} | " + " | ".join(shown) + " |" + tail)
        lines.append("")
    latency: dict[str, dict[str, float]] = result["latency_ms"]  # type: ignore[assignment]
    lines += ["| search latency, ms | " + " | ".join(configs) + " |", "|---|" + "---:|" * len(configs)]
    lines.append("| p50 | " + " | ".join(f"{latency[c]['p50']:.1f}" for c in configs) + " |")
    lines.append("| p95 | " + " | ".join(f"{latency[c]['p95']:.1f}" for c in configs) + " |")
    usage: dict[str, dict[str, int]] = result.get("text_graph_usage") or {}  # type: ignore[assignment]
    for config, outcomes in usage.items():
        lines += ["", f"{config}: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--split", default="dev,test", help="comma-separated: dev, test")
    parser.add_argument("--no-text-graph", action="store_true", help="BM25, dense and hybrid only")
    parser.add_argument("--extraction", action="store_true", help="also run tiers 0-2 at ingest")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="a text-graph configuration more, as walk settings (walk_weight=1.0,keep_head=1); repeatable",
    )
    parser.add_argument("--data-dir", type=Path, help="keep the index here and reuse it on the next run")
    parser.add_argument("--out", type=Path, default=Path("bench-results/multihop"))
    args = parser.parse_args(argv)
    splits = [s.strip() for s in args.split.split(",") if s.strip()]
    console = Console(stderr=True)
    result = run_multihop_benchmark(
        KgragSettings(),
        splits=splits,
        text_graph=not args.no_text_graph,
        console=console,
        extraction=args.extraction,
        variants=parse_variants(args.variant),
        data_dir=args.data_dir,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "multihop.json").write_text(json.dumps(result, indent=2))
    markdown = multihop_markdown(result)
    (args.out / "multihop.md").write_text(markdown)
    console.print(markdown)


if __name__ == "__main__":
    main()
