#!/usr/bin/env python3
"""Assign the bundled questions to the dev split (tuned on) or the test split (reported, never tuned on).

Standard library only. Stratified by question type with a fixed seed: within each type the questions are
ordered by sha256("<seed>:<id>") and the first third (rounded) go to test, so the split depends on nothing
but the ids, the types, the seed and the share. Questions in questions-test.jsonl were written for the
test split and are all "test". Questions added to questions.jsonl later for tuning (ids `d01`, `d02`, ...)
were written for the dev split: they are all "dev" and stay out of the stratified draw, so adding them
moves no bundled question between the splits.

Usage:
    python split_questions.py           # rewrite the "split" field of questions.jsonl
    python split_questions.py --check   # exit 1 if any question's split differs from the assignment
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 11
TEST_SHARE = 1 / 3


def written_for_dev(qid: str) -> bool:
    return qid.startswith("d") and qid[1:].isdigit()


def assign(questions: list[dict], seed: int = SEED, share: float = TEST_SHARE) -> dict[str, str]:
    by_type: dict[str, list[str]] = defaultdict(list)
    out: dict[str, str] = {}
    for q in questions:
        if written_for_dev(q["id"]):
            out[q["id"]] = "dev"
        else:
            by_type[q["type"]].append(q["id"])
    for ids in by_type.values():
        ordered = sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
        n_test = round(len(ordered) * share)
        for position, qid in enumerate(ordered):
            out[qid] = "test" if position < n_test else "dev"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    lines = [line for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = [json.loads(line) for line in lines]
    wanted = assign(questions)
    if args.check:
        wrong = [q["id"] for q in questions if q.get("split") != wanted[q["id"]]]
        if wrong:
            print(f"split differs from the assignment for: {', '.join(wrong)}", file=sys.stderr)
            return 1
        return 0
    with args.questions.open("w", encoding="utf-8") as out:
        for q in questions:
            q.pop("split", None)
            keys = list(q)
            # "split" goes right after "type", where a reader looks for it.
            at = keys.index("type") + 1
            ordered = {k: q[k] for k in keys[:at]} | {"split": wanted[q["id"]]} | {k: q[k] for k in keys[at:]}
            out.write(json.dumps(ordered, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
