#!/usr/bin/env python3
"""Write the multi-hop corpus (documents.jsonl) and its questions (questions.jsonl) from a fixed seed.

The generator is `kgrag_runtime.benchmarks.multihop_corpus` (the name pools of the ingest benchmark's
encyclopedic corpus); the split is assigned there, stratified by kind, before anything was tuned.

Usage:
    uv run python corpora/multihop/generate.py           # rewrite both files
    uv run python corpora/multihop/generate.py --check   # exit 1 if either file differs from a regeneration
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kgrag_runtime.benchmarks.multihop_corpus import generate, to_jsonl

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    passages, questions = generate()
    files = {HERE / "documents.jsonl": to_jsonl(passages), HERE / "questions.jsonl": to_jsonl(questions)}
    if args.check:
        stale = [p.name for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
        if stale:
            print(f"regenerate: {', '.join(stale)} differ from the generator", file=sys.stderr)
            return 1
        return 0
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
