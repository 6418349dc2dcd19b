"""Writes the learned router's shipped files: `python -m kgrag_runtime.router_fit [--check]`.

1. `corpora/router/questions-bundled-dev.jsonl`: the typed dev questions of `corpora/northwind/questions.jsonl`
   (the image ships `corpora/router` only, and the router may train on dev, never on test).
2. `corpora/router/learned-router.json`: the router fitted from the router set plus those questions with the
   local embedding model, so a process routes without embedding ~230 training questions at start-up.

`--check` writes nothing and exits 1 when either file differs from what it would write (the fitted model
compared within a float tolerance, since it is the product of many sums).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from kgrag_core.graph_retrieval.learned_router import FittedRouter, LearnedRouter, dump_fitted, parse_fitted
from kgrag_core.graph_retrieval.router import QuestionKind
from kgrag_core.ports import Embedder
from kgrag_runtime.graph import BUNDLED_ROUTER_DEV, BUNDLED_ROUTER_FITTED, router_examples

BUNDLED_QUESTIONS = BUNDLED_ROUTER_DEV.parents[1] / "northwind" / "questions.jsonl"
TOLERANCE = 1e-6


def bundled_dev_lines(questions: Path = BUNDLED_QUESTIONS) -> str:
    """The dev split's questions of a routed type, as router examples, in file order."""
    kinds = {k.value for k in QuestionKind}
    out = []
    for line in questions.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        if q.get("split") == "dev" and q["type"] in kinds:
            out.append(json.dumps({"id": q["id"], "question": q["question"], "kind": q["type"]}, ensure_ascii=False))
    return "\n".join(out) + "\n"


def refit(embedder: Embedder) -> FittedRouter:
    return LearnedRouter(embedder, router_examples()).fit()


def same_fit(a: FittedRouter, b: FittedRouter) -> bool:
    return a.version == b.version and all(
        x.shape == y.shape and bool(np.allclose(x, y, rtol=TOLERANCE, atol=TOLERANCE))
        for x, y in ((a.model.weights, b.model.weights), (a.model.mean, b.model.mean), (a.model.scale, b.model.scale))
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder

    dev = bundled_dev_lines()
    if args.check:
        if BUNDLED_ROUTER_DEV.read_text(encoding="utf-8") != dev:
            print(f"{BUNDLED_ROUTER_DEV} is not the dev split of {BUNDLED_QUESTIONS}")
            return 1
        if not same_fit(parse_fitted(BUNDLED_ROUTER_FITTED.read_text(encoding="utf-8")), refit(OnnxMiniLmEmbedder())):
            print(f"{BUNDLED_ROUTER_FITTED} is not what the bundled sets fit")
            return 1
        return 0
    BUNDLED_ROUTER_DEV.write_text(dev, encoding="utf-8")
    fitted = refit(OnnxMiniLmEmbedder())
    BUNDLED_ROUTER_FITTED.write_text(dump_fitted(fitted), encoding="utf-8")
    print(f"wrote {BUNDLED_ROUTER_DEV.name} and {BUNDLED_ROUTER_FITTED.name} ({fitted.version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
