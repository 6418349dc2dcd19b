"""The router decision in one run (issue 11): router accuracy per type for the rules and the learned router on
the bundled dev split, the router's own dev set (`corpora/router/questions-dev.jsonl`) and the test split, and
retrieval quality per type and split (nDCG@10, recall@10/20) of hybrid+graph with each router on the Northwind
corpus with its prose-level graph (the bundled reply book), same app, same index.

The learned router trains on the bundled dev questions, so its in-sample dev figure is not a measurement:
the bundled dev column also reports it by 5-fold cross-validation (each question routed by a router trained on
the router set and the other folds). Neither router has seen the router's dev set or the test split.

    uv run python -m kgrag_runtime.benchmarks.router --out bench-results/router
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from kgrag_core.evaluation.metrics import mean
from kgrag_core.graph_retrieval.learned_router import LearnedRouter, RouterExample
from kgrag_core.graph_retrieval.router import QuestionKind, QuestionRouter, RuleRouter
from kgrag_core.ingest import IngestStatus
from kgrag_core.ports import Embedder
from kgrag_runtime.graph import BUNDLED_ROUTER_SET, learned_router, router_examples
from kgrag_runtime.settings import KgragSettings

CORPUS = BUNDLED_ROUTER_SET.parents[1] / "northwind"
ROUTER_DEV = BUNDLED_ROUTER_SET.with_name("questions-dev.jsonl")
# Dev entity questions phrased unlike the bundled ones ("tell me about X", "X's role in ..."), with gold documents:
# the bundled dev entity questions are in the learned router's training set, so they cannot show its routes' cost.
ENTITY_DEV = CORPUS / "questions-entity-dev.jsonl"
# The entity strategy's fusion before stop 24 (no hybrid floor), for the same-run comparison with the defaults.
STOP_23_FUSION: dict[str, object] = {
    "entity_keep_head": 0,
    "lookup_keep_head": 0,
    "entity_agreed_rank": 0,
    "entity_claim_boost": True,
    "entity_graph_weight": None,
}
FOLDS = 5
Row = tuple[str, str, str]  # id, question, kind


class _Memo:
    """The embedder with each text embedded once: the folds retrain on the same questions."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self._seen: dict[str, tuple[float, ...]] = {}

    def embed_query(self, text: str) -> tuple[float, ...]:
        if text not in self._seen:
            self._seen[text] = tuple(self.inner.embed_query(text))
        return self._seen[text]

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self.embed_query(t) for t in texts]


def _rows(path: Path, split: str | None, kind_key: str) -> list[Row]:
    kinds = {k.value for k in QuestionKind}
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            if q[kind_key] in kinds and (split is None or q.get("split") == split):
                out.append((q["id"], q["question"], q[kind_key]))
    return out


def _per_type(rows: Sequence[Row], routed: Mapping[str, str]) -> dict[str, dict[str, float | int]]:
    grouped: dict[str, list[float]] = defaultdict(list)
    for qid, _, kind in rows:
        hit = 1.0 if routed[qid] == kind else 0.0
        grouped[kind].append(hit)
        grouped["ALL"].append(hit)
    return {
        k: {"n": len(v), "accuracy": round(mean(v), 3)}
        for k, v in sorted(grouped.items(), key=lambda kv: (kv[0] == "ALL", kv[0]))
    }


def _folds(embedder: Embedder, dev: Sequence[Row]) -> Iterator[tuple[LearnedRouter, list[Row]]]:
    """Per fold: a learned router trained on the router set and the other folds, and the fold it holds out."""
    base = router_examples(BUNDLED_ROUTER_SET)
    for fold in range(FOLDS):
        held = [r for i, r in enumerate(dev) if i % FOLDS == fold]
        train = base + [RouterExample(q, QuestionKind(k)) for i, (_, q, k) in enumerate(dev) if i % FOLDS != fold]
        yield LearnedRouter(embedder, train), held


def _cross_validated(embedder: Embedder, dev: Sequence[Row]) -> dict[str, str]:
    """Each bundled dev question routed by a learned router trained on the router set and the other folds."""
    return {qid: router.route(q).kind.value for router, held in _folds(embedder, dev) for qid, q, _ in held}


GUARD_MARGINS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.6)


def lookup_guard_sweep(embedder: Embedder) -> dict[str, object]:
    """Dev only: a lookup guard that sends a question to plain hybrid when the learned router's top kind beats
    `lookup` by less than a margin, on the router dev set (shipped router) and the bundled dev split (5-fold CV).
    Per margin: accuracy, lookups kept on hybrid, and other questions the guard wrongly sends there."""
    memo = _Memo(embedder)
    router_dev, bundled_dev = _rows(ROUTER_DEV, None, "kind"), _rows(CORPUS / "questions.jsonl", "dev", "type")
    shipped = learned_router(memo)
    probs = {qid: (kind, shipped.probabilities(q)) for qid, q, kind in router_dev}
    probs.update({qid: (k, r.probabilities(q)) for r, held in _folds(memo, bundled_dev) for qid, q, k in held})

    def guarded(p: Mapping[QuestionKind, float], margin: float) -> str:
        kind = max(p, key=lambda k: p[k])
        return "lookup" if p[kind] - p[QuestionKind.LOOKUP] < margin else kind.value

    out: dict[str, object] = {}
    for name, rows in (("router dev set", router_dev), ("bundled dev (5-fold CV)", bundled_dev)):
        out[name] = {
            str(margin): {
                "accuracy": round(mean([float(guarded(probs[q][1], margin) == probs[q][0]) for q, _, _ in rows]), 3),
                "lookups kept": sum(guarded(probs[q][1], margin) == "lookup" == k for q, _, k in rows),
                "others sent to hybrid": sum(guarded(probs[q][1], margin) == "lookup" != k for q, _, k in rows),
            }
            for margin in GUARD_MARGINS
        }
    return out


def router_accuracy_table(embedder: Embedder) -> dict[str, object]:
    memo = _Memo(embedder)
    sets = {
        "bundled dev": _rows(CORPUS / "questions.jsonl", "dev", "type"),
        "router dev set": _rows(ROUTER_DEV, None, "kind"),
        "entity dev set": _rows(ENTITY_DEV, None, "type"),
        "test": _rows(CORPUS / "questions.jsonl", "test", "type")
        + _rows(CORPUS / "questions-test.jsonl", "test", "type"),
    }
    routers: dict[str, QuestionRouter] = {"rules": RuleRouter(), "learned": learned_router(memo)}
    out: dict[str, dict[str, object]] = {name: {"version": r.version} for name, r in routers.items()}
    for name, router in routers.items():
        for set_name, rows in sets.items():
            out[name][set_name] = _per_type(rows, {qid: router.route(q).kind.value for qid, q, _ in rows})
    cross = _cross_validated(memo, sets["bundled dev"])
    out["learned"]["bundled dev (5-fold CV)"] = _per_type(sets["bundled dev"], cross)
    return dict(out)


def retrieval_by_router(embedder: Embedder, work: Path, *, dev_only: bool = False) -> dict[str, object]:
    from kgrag_adapters.connectors import iter_path
    from kgrag_runtime.evaluation.runner import run_evaluation
    from kgrag_runtime.wiring import open_embedded

    settings = KgragSettings(
        data_dir=work / "index",
        extraction_reply_book=CORPUS / "extraction" / "corpus_replies.jsonl",
        extraction_priority_sources=["*"],
        graph_expansion_budget_s=10.0,  # wide budgets: a loaded machine must not truncate one router's walks
        graph_timeout_s=30.0,
        answer_cache_ttl_s=0,  # each router's asks are answered, never served from the other's cache
    )
    out: dict[str, object] = {}
    with open_embedded(settings, embedder=embedder) as kg:
        outcomes = kg.ingest(iter_path(CORPUS / "documents.jsonl"))
        assert {o.status for o in outcomes} == {IngestStatus.INDEXED}
        assert kg.graph_searcher is not None
        defaults = kg.graph_searcher.settings
        stop_23 = replace(defaults, **STOP_23_FUSION)  # type: ignore[arg-type]
        configs = (
            ("rules", RuleRouter(), stop_23),
            ("learned, stop-23 fusion", learned_router(embedder), stop_23),
            ("learned, default fusion", learned_router(embedder), defaults),
        )
        bundled = [CORPUS / "questions.jsonl", CORPUS / "questions-test.jsonl"]
        for name, router, searcher_settings in configs:
            kg.graph_searcher.router, kg.graph_searcher.settings = router, searcher_settings
            rows: dict[str, object] = {}
            for files, label in ((bundled, ""), ([ENTITY_DEV], "entity ")):
                report = run_evaluation(
                    kg, files, budget_tokens=2000, progress_console=None, answers=False,
                    only=_dev_ids() if dev_only and not label else None,
                )  # fmt: skip
                rows.update(_retrieval_rows(report, label))
            out[name] = rows
        kg.graph_searcher.settings = defaults
    return out


def _retrieval_rows(report: Mapping[str, object], label: str) -> dict[str, object]:
    keep = ("ndcg@10", "recall@10", "recall@20", "graph_used")
    per_split: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] = report["per_split"]  # type: ignore[assignment]
    return {
        f"{label}{split}": {
            cfg: {t: {k: v for k, v in row.items() if k in keep or k == "n"} for t, row in rows.items()}
            for cfg, rows in per_cfg.items()
            if cfg in ("hybrid", "hybrid+graph")
        }
        for split, per_cfg in per_split.items()
    } | {f"{label}router_accuracy": report["graph"]["router_accuracy"]}  # type: ignore[index]


def _dev_ids() -> set[str]:
    lines = (CORPUS / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return {q["id"] for q in map(json.loads, filter(str.strip, lines)) if q.get("split") == "dev"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/router"))
    parser.add_argument("--no-retrieval", action="store_true", help="router accuracy only (no corpus ingest)")
    parser.add_argument("--dev-only", action="store_true", help="retrieval on the dev split only, no accuracy")
    parser.add_argument("--lookup-guard", action="store_true", help="only the lookup guard's sweep, on dev")
    args = parser.parse_args(argv)
    from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder

    embedder = OnnxMiniLmEmbedder()
    if args.lookup_guard:
        print(json.dumps(lookup_guard_sweep(embedder), indent=1))
        return
    result: dict[str, object] = {}
    if not args.dev_only:  # the accuracy table reads the test split: once, with the final router
        result["router_accuracy"] = router_accuracy_table(embedder)
        print(json.dumps(result["router_accuracy"], indent=1))
    if not args.no_retrieval:
        with tempfile.TemporaryDirectory(prefix="kgrag-router-bench-") as work:
            result["retrieval"] = retrieval_by_router(embedder, Path(work), dev_only=args.dev_only)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "router.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result.get("retrieval"), indent=1))


if __name__ == "__main__":
    main()
