"""Global questions on the bundled corpus (issue 12): GLOBAL against hybrid top-k and hybrid+graph, per access
scope, and the GLOBAL route's latency.

The corpus is ingested on an embedded app with the prose-level graph (tier 3 from the bundled reply book, a
stand-in for a model: corpora/northwind/extraction/README.md), communities are built by `CommunityService`
(hierarchical Leiden), and every question of `corpora/northwind/questions-global.jsonl` (held out: the test
split, written before any tuning) is asked four ways (hybrid, hybrid+graph, GLOBAL, AUTO) by two callers:

- `all`: the question's principal (every group), scored against all its gold themes;
- `public`: a caller in no group, scored against the themes it could know (those with a readable supporting
  document); its themes must rest on nothing it cannot read (`unreadable_themes`, must be 0).

Theme recall: share of gold themes one of whose documents the answer cites; document recall: share of all
supporting documents cited (kgrag_core.evaluation.global_metrics). The answer cache is off, so every ask is
timed in full; GLOBAL latency p50/p95 is over those asks, and each GLOBAL ask is repeated with nothing reused
from its own search or earlier asks (the same-run baseline of the route's reuse).

    uv run python -m kgrag_runtime.benchmarks.global_route --out bench-results/global
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kgrag_adapters.communities.leiden import LeidenDetector
from kgrag_adapters.connectors import iter_path
from kgrag_adapters.postgres.communities import PostgresCommunityStore
from kgrag_core.acl import Caller, readable_classes
from kgrag_core.ask_modes import AskMode
from kgrag_core.communities.service import CommunityService
from kgrag_core.evaluation.global_metrics import (
    GoldTheme,
    document_recall,
    parse_gold_themes,
    theme_recall,
    unreadable_themes,
    visible_themes,
)
from kgrag_core.evaluation.questions import EvalQuestion, parse_questions
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

CORPUS = Path(__file__).resolve().parents[5] / "corpora" / "northwind"
STRATEGIES = {
    "hybrid": AskMode.VECTOR,
    "hybrid+graph": AskMode.GRAPH_ASSISTED,
    "global": AskMode.GLOBAL,
    "auto": AskMode.AUTO,  # the router decides; a question it calls global takes the GLOBAL route
}
PUBLIC = Caller(user="eval-public")
COLUMNS = ("theme_recall", "doc_recall", "themes", "unreadable_themes", "fallback", "global_route", "below_hybrid")


def readable_docs(kg: KgragApp, caller: Caller) -> set[str]:
    allowed = set(readable_classes(kg.searcher.acls.acl_classes(), caller))
    return {d.doc_id for d in kg.searcher.documents.list_documents() if d.acl_class_id in allowed}


def build_communities(kg: KgragApp) -> dict[str, object]:
    """Communities over the app's graph, as `kgrag communities rebuild` builds them."""
    if kg.graph is None:
        raise SystemExit("the knowledge graph is off")
    store = PostgresCommunityStore(kg.graph.store.pool)
    report = CommunityService(store, store, LeidenDetector()).rebuild()
    return {"communities": report.communities_written, "levels": report.levels, "seconds": round(report.seconds, 3)}


def score_question(
    kg: KgragApp, q: EvalQuestion, gold: Sequence[GoldTheme], caller: Caller, readable: set[str]
) -> dict[str, dict[str, float]]:
    mine = visible_themes(gold, readable)
    out: dict[str, dict[str, float]] = {}
    for name, mode in STRATEGIES.items():
        started = time.perf_counter()
        answer = kg.ask(q.question, caller, mode=mode)
        seconds = time.perf_counter() - started
        citations = answer["citations"]
        themes = answer.get("themes") or []
        assert isinstance(citations, list) and isinstance(themes, list)
        cited = {str(c["doc_id"]) for c in citations}
        theme_docs = [set(t["doc_ids"]) for t in themes]
        out[name] = {
            "theme_recall": theme_recall(mine, cited),
            "doc_recall": document_recall(mine, cited),
            "themes": float(len(themes)),
            "unreadable_themes": float(unreadable_themes(theme_docs, readable)),
            "uncited_unreadable": float(len(cited - readable)),
            "fallback": float(bool(answer.get("global_fallback"))),
            "global_route": float("communities" in answer["strategy_used"]),  # type: ignore[operator]
            "seconds": seconds,
        }
        if name != "hybrid":  # questions where this strategy covers fewer gold themes than hybrid (GLOBAL: 0)
            out[name]["below_hybrid"] = float(out[name]["theme_recall"] < out["hybrid"]["theme_recall"])
    out["global"]["baseline_seconds"] = _without_reuse(kg, q.question, caller, out["global"]["seconds"])
    return out


def _without_reuse(kg: KgragApp, question: str, caller: Caller, seconds: float) -> float:
    """The same GLOBAL ask again with nothing reused from its own search or earlier asks (every view's chunks
    read anew): the same-run baseline of its latency."""
    answers = kg.global_answers
    if answers is None:
        return seconds
    answers.reuse = False
    try:
        started = time.perf_counter()
        kg.ask(question, caller, mode=AskMode.GLOBAL)
        return time.perf_counter() - started
    finally:
        answers.reuse = True


def load_questions(split: str) -> tuple[list[EvalQuestion], dict[str, tuple[GoldTheme, ...]]]:
    """test: the held-out global questions with their gold themes; dev: the bundled set's global questions of
    the dev split (what may be tuned on), each gold document a theme of its own."""
    if split == "test":
        lines = (CORPUS / "questions-global.jsonl").read_text(encoding="utf-8").splitlines()
        return parse_questions(lines), parse_gold_themes(lines)
    bundled = parse_questions((CORPUS / "questions.jsonl").read_text(encoding="utf-8").splitlines())
    dev = [q for q in bundled if q.type == "global" and q.split == "dev"]
    return dev, {q.id: tuple(GoldTheme(d, (d,)) for d in q.gold) for q in dev}


def run(
    out_dir: Path | None, console: Console, *, split: str = "test", data_dir: Path | None = None
) -> dict[str, object]:
    questions, gold = load_questions(split)
    with tempfile.TemporaryDirectory(prefix="kgrag-global-") as tmp:
        settings = KgragSettings(
            data_dir=data_dir or Path(tmp),
            extraction_reply_book=CORPUS / "extraction" / "corpus_replies.jsonl",
            extraction_priority_sources=["*"],
            answer_cache_ttl_s=0,
            graph_expansion_budget_s=10.0,
            graph_timeout_s=30.0,
        )
        with open_embedded(settings) as kg:
            started = time.perf_counter()
            kg.ingest(iter_path(CORPUS / "documents.jsonl"))
            ingest_s = time.perf_counter() - started
            build = build_communities(kg)
            per: dict[str, dict[str, list[float]]] = {}
            latencies: list[float] = []
            baseline: list[float] = []  # the same asks with nothing reused (`_without_reuse`)
            for caller in (questions[0].caller, PUBLIC) if questions else ():
                # Untimed: the first GLOBAL ask of a scope reads every view cold, which the baseline (asked
                # second) would never pay; without it the comparison's p95 is that one ask.
                kg.ask(questions[0].question, caller, mode=AskMode.GLOBAL)
            for q in questions:
                for scope, caller in (("all", q.caller), ("public", PUBLIC)):
                    scored = score_question(kg, q, gold[q.id], caller, readable_docs(kg, caller))
                    for name, metrics in scored.items():
                        row = per.setdefault(f"{scope}/{name}", {})
                        for metric, value in metrics.items():
                            row.setdefault(metric, []).append(value)
                    latencies.append(scored["global"]["seconds"])
                    baseline.append(scored["global"]["baseline_seconds"])
    table = {key: {m: round(statistics.fmean(v), 3) for m, v in row.items()} for key, row in sorted(per.items())}
    ordered, before = sorted(latencies), sorted(baseline)
    report: dict[str, object] = {
        "questions": len(questions),
        "split": split,
        "ingest_s": round(ingest_s, 1),
        "communities": build,
        "table": table,
        "global_latency_ms": {
            "p50": round(1000 * statistics.median(ordered), 1),
            "p95": round(1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
            "asks": len(ordered),
        },
        "global_latency_ms_without_reuse": {
            "p50": round(1000 * statistics.median(before), 1),
            "p95": round(1000 * before[min(len(before) - 1, int(0.95 * len(before)))], 1),
            "asks": len(before),
        },
    }
    view = Table(title=f"Global questions ({len(questions)}, {split} split): mean per question")
    for column in ("scope/strategy", *COLUMNS):
        view.add_column(column)
    for key, means in table.items():
        view.add_row(key, *(str(means.get(c, "-")) for c in COLUMNS))
    console.print(view)
    console.print(f"GLOBAL latency: {report['global_latency_ms']}; communities: {build}")
    console.print(f"Same asks, nothing reused (baseline): {report['global_latency_ms_without_reuse']}")
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"global_route_{split}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="Write global_route.json here.")
    parser.add_argument("--split", choices=("dev", "test"), default="test", help="Tune on dev; report test.")
    parser.add_argument("--data-dir", type=Path, default=None, help="Keep the index here (re-runs skip ingest).")
    args = parser.parse_args()
    run(args.out, Console(), split=args.split, data_dir=args.data_dir)


if __name__ == "__main__":
    main()
