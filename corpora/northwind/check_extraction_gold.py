#!/usr/bin/env python3
"""Validate the labelled extraction set (extraction/gold.jsonl) and the authored tier-3 replies.

Standard library only (Python 3.11+). Exits with status 1 if any problem is found.

Usage:
    python check_extraction_gold.py                 # checks the files next to this script
    python check_extraction_gold.py --gold G.jsonl --replies R.jsonl --docs D.jsonl [--min-chunks 25]
    python check_extraction_gold.py --ontology-json ONTOLOGY.json   # also check types against an ontology

Checks (structural; this script cannot chunk documents or read YAML):
  gold     valid JSON per line, unique ids, required fields and types, known modality/polarity,
           ISO dates or null, the document exists, the anchor occurs exactly once in the document
           text, relation endpoints and claim subjects are listed among the chunk's entities, and
           at least --min-chunks entries.
  replies  valid JSON per line, one reply per gold id at most, every item carries the chunk id
           placeholder and the fields of the tier-3 reply format, every quote is found in the
           document text (whitespace, quote marks and dashes normalised), except items marked
           "_mistake": "paraphrase", whose quote must NOT be found.
  ontology with --ontology-json (the ontology as JSON, same shape as schemas/ontology/ontology.yaml):
           entity types, relation triples and attributes exist and are allowed.

That each anchor falls inside exactly one chunk of the project's chunker, and the ontology check
against the YAML file itself, are tested in tests/unit/test_extraction_gold.py.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODALITIES = {"fact", "reported", "plan", "opinion", "hypothetical", "ai_suggestion"}
POLARITIES = {"positive", "negative"}
MISTAKES = {"paraphrase", "triple_not_allowed", "conversation_mechanics", "plan_as_fact", "negation_missed"}
ID_RE = re.compile(r"^x\d{2,}$")
PLACEHOLDER = "{chunk_id}"
RELATION_FIELDS = ("subject", "subject_type", "relation", "object", "object_type", "polarity", "modality")
CLAIM_FIELDS = ("entity", "entity_type", "attribute", "value", "modality", "polarity")
REPLY_FIELDS = {
    "entities": ("chunk_id", "name", "type", "quote"),
    "relations": ("chunk_id", *RELATION_FIELDS, "quote", "confidence"),
    "claims": ("chunk_id", *CLAIM_FIELDS, "quote", "confidence"),
}
# The same normalisation as kgrag_core.answering.quotes: whitespace, quotation marks and dashes only.
_QUOTES = str.maketrans(
    {c: "'" for c in "\u2018\u2019\u201a\u201b\u2032"}
    | {c: '"' for c in "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"}
    | {c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"}
)
_SPACE = re.compile(r"\s+")

problems: list[str] = []


def problem(msg: str) -> None:
    problems.append(msg)


def normalise(text: str) -> str:
    return _SPACE.sub(" ", text.translate(_QUOTES)).strip()


def read_jsonl(path: Path, what: str) -> list[dict]:
    rows: list[dict] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problem(f"{what}: cannot read {path}: {exc}")
        return rows
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problem(f"{what} line {n}: invalid JSON: {exc.msg}")
            continue
        if not isinstance(row, dict):
            problem(f"{what} line {n}: not a JSON object")
            continue
        rows.append(row)
    return rows


def is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def check_date(value: object, where: str) -> None:
    if value is None:
        return
    try:
        dt.date.fromisoformat(str(value))
    except ValueError:
        problem(f"{where}: {value!r} is not an ISO date")


def check_fields(item: object, fields: tuple[str, ...], where: str) -> bool:
    if not isinstance(item, dict):
        problem(f"{where}: not an object")
        return False
    ok = True
    for field in fields:
        if field == "confidence":
            if not isinstance(item.get(field), (int, float)) or not 0 <= item[field] <= 1:
                problem(f"{where}: confidence must be a number in [0, 1]")
                ok = False
        elif not is_text(item.get(field)):
            problem(f"{where}: missing or empty {field!r}")
            ok = False
    if ok and "modality" in fields and item["modality"] not in MODALITIES:
        problem(f"{where}: unknown modality {item['modality']!r}")
    if ok and "polarity" in fields and item["polarity"] not in POLARITIES:
        problem(f"{where}: unknown polarity {item['polarity']!r}")
    for key in ("valid_from", "valid_to"):
        check_date(item.get(key), f"{where} {key}")
    return ok


def check_gold(rows: list[dict], docs: dict[str, dict], min_chunks: int) -> dict[str, dict]:
    by_id: dict[str, dict] = {}
    for row in rows:
        gid = row.get("id")
        where = f"gold {gid!r}"
        if not isinstance(gid, str) or not ID_RE.match(gid):
            problem(f"{where}: id must look like x01")
            continue
        if gid in by_id:
            problem(f"{where}: duplicate id")
            continue
        by_id[gid] = row
        doc = docs.get(str(row.get("doc_id")))
        if doc is None:
            problem(f"{where}: unknown doc_id {row.get('doc_id')!r}")
        anchor = row.get("anchor")
        if not is_text(anchor):
            problem(f"{where}: missing anchor")
        elif doc is not None:
            count = doc["text"].count(anchor)
            if count != 1:
                problem(f"{where}: anchor occurs {count} times in {doc['id']} (must be exactly once, verbatim)")
        if not isinstance(row.get("notes", ""), str):
            problem(f"{where}: notes must be a string")
        listed: set[tuple[str, str]] = set()
        for i, entity in enumerate(row.get("entities") or []):
            if check_fields(entity, ("name", "type"), f"{where} entity {i}"):
                listed.add((entity["name"], entity["type"]))
        for i, rel in enumerate(row.get("relations") or []):
            if check_fields(rel, RELATION_FIELDS, f"{where} relation {i}"):
                for end in ("subject", "object"):
                    if (rel[end], rel[f"{end}_type"]) not in listed:
                        problem(f"{where} relation {i}: {end} {rel[end]!r} is not among the entities")
        for i, claim in enumerate(row.get("claims") or []):
            valid = check_fields(claim, CLAIM_FIELDS, f"{where} claim {i}")
            if valid and (claim["entity"], claim["entity_type"]) not in listed:
                problem(f"{where} claim {i}: entity {claim['entity']!r} is not among the entities")
    if len(by_id) < min_chunks:
        problem(f"gold: {len(by_id)} chunks, fewer than the minimum {min_chunks}")
    return by_id


def check_replies(rows: list[dict], gold: dict[str, dict], docs: dict[str, dict]) -> collections.Counter[str]:
    mistakes: collections.Counter[str] = collections.Counter()
    seen: set[str] = set()
    for row in rows:
        gid = row.get("gold_id")
        where = f"reply {gid!r}"
        if gid not in gold:
            problem(f"{where}: no gold chunk with this id")
            continue
        if gid in seen:
            problem(f"{where}: more than one reply")
        seen.add(gid)
        reply = row.get("reply")
        if not isinstance(reply, dict):
            problem(f"{where}: reply must be an object")
            continue
        doc = docs.get(gold[gid].get("doc_id", ""))
        text = normalise(doc["text"]) if doc else ""
        for kind, fields in REPLY_FIELDS.items():
            items = reply.get(kind)
            if not isinstance(items, list):
                problem(f"{where}: {kind!r} must be a list")
                continue
            for i, item in enumerate(items):
                at = f"{where} {kind} {i}"
                if not check_fields(item, fields, at):
                    continue
                if item["chunk_id"] != PLACEHOLDER:
                    problem(f"{at}: chunk_id must be the placeholder {PLACEHOLDER}")
                mistake = item.get("_mistake")
                if mistake is not None and mistake not in MISTAKES:
                    problem(f"{at}: unknown _mistake {mistake!r}")
                    continue
                if mistake:
                    mistakes[mistake] += 1
                found = normalise(item["quote"]) in text
                if mistake == "paraphrase" and found:
                    problem(f"{at}: marked as a paraphrase but the quote is in the document")
                elif mistake != "paraphrase" and not found:
                    problem(f"{at}: quote not found in {gold[gid].get('doc_id')}: {item['quote'][:60]!r}")
    return mistakes


def check_ontology(gold: dict[str, dict], ontology: dict) -> None:
    entity_types = set(ontology.get("entity_types") or {})
    relations = ontology.get("relation_types") or {}
    attributes = ontology.get("attributes") or {}

    def names(value: object) -> set[str]:
        return {value} if isinstance(value, str) else set(value or [])

    for gid, row in gold.items():
        for entity in row.get("entities") or []:
            if isinstance(entity, dict) and entity.get("type") not in entity_types:
                problem(f"gold {gid!r}: unknown entity type {entity.get('type')!r}")
        for rel in row.get("relations") or []:
            spec = relations.get(rel.get("relation")) if isinstance(rel, dict) else None
            if spec is None:
                problem(f"gold {gid!r}: unknown relation {rel!r}")
            elif rel.get("subject_type") not in names(spec.get("subject")) or rel.get("object_type") not in names(
                spec.get("object")
            ):
                problem(f"gold {gid!r}: triple not allowed: {rel.get('subject')} {rel['relation']} {rel.get('object')}")
        for claim in row.get("claims") or []:
            spec = attributes.get(claim.get("attribute")) if isinstance(claim, dict) else None
            if spec is None:
                problem(f"gold {gid!r}: unknown attribute {claim!r}")
            elif claim.get("entity_type") not in names(spec.get("entity_types")):
                problem(f"gold {gid!r}: {claim.get('entity_type')} may not have {claim['attribute']!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=HERE / "documents.jsonl")
    ap.add_argument("--gold", type=Path, default=HERE / "extraction" / "gold.jsonl")
    ap.add_argument("--replies", type=Path, default=HERE / "extraction" / "llm_replies.jsonl")
    ap.add_argument("--ontology-json", type=Path, default=None, help="the ontology as JSON (optional)")
    ap.add_argument("--min-chunks", type=int, default=25, help="minimum number of gold chunks (default 25)")
    args = ap.parse_args()

    docs = {str(d.get("id")): d for d in read_jsonl(args.docs, "documents") if isinstance(d.get("text"), str)}
    gold = check_gold(read_jsonl(args.gold, "gold"), docs, args.min_chunks)
    mistakes = check_replies(read_jsonl(args.replies, "replies"), gold, docs)
    if args.ontology_json is not None:
        try:
            ontology = json.loads(args.ontology_json.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problem(f"ontology: cannot read {args.ontology_json}: {exc}")
        else:
            check_ontology(gold, ontology)

    items = collections.Counter()
    modalities: collections.Counter[str] = collections.Counter()
    negative = 0
    for row in gold.values():
        for kind in ("entities", "relations", "claims"):
            items[kind] += len(row.get(kind) or [])
        for item in [*(row.get("relations") or []), *(row.get("claims") or [])]:
            if isinstance(item, dict):
                modalities[str(item.get("modality"))] += 1
                negative += item.get("polarity") == "negative"
    print(f"gold: {len(gold)} chunks from {len({r.get('doc_id') for r in gold.values()})} documents ({args.gold})")
    print(f"  entities {items['entities']}, relations {items['relations']}, claims {items['claims']}")
    print("  modality: " + ", ".join(f"{m} {n}" for m, n in sorted(modalities.items())) + f"; negative {negative}")
    print(f"replies: intended mistakes: {dict(sorted(mistakes.items())) or 'none'} ({args.replies})")
    if args.ontology_json is None:
        print("ontology: not checked here (pass --ontology-json; the unit tests check the YAML)")

    if problems:
        print(f"\n{len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print("\nOK: no problems found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
