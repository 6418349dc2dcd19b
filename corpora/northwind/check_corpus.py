#!/usr/bin/env python3
"""Validate a kgrag evaluation corpus (documents.jsonl + questions.jsonl).

Standard library only (Python 3.11+). Exits with status 1 if any problem is found.

Usage:
    python check_corpus.py                      # checks the files next to this script
    python check_corpus.py --docs D.jsonl --questions Q.jsonl [--min-per-type 6]

Checks (the formats of docs/getting-started.md and docs/evaluation.md: what they call optional may be left out):
  documents  valid JSON per line, unique ids, required fields (id, title, text) and the types of the
             optional ones (source, uri, published_at: ISO 8601 date or date-time); malformed ACLs
             are reported (they are allowed, and must be treated as private by the system under test).
  questions  valid JSON per line, unique ids, required fields (id, question, type) and the types of
             the optional ones, known types, every gold id exists, grades are 1 or 2, every key fact
             is a byte-exact substring of at least one gold document (grade >= 1) and is 8-25 words
             long, unanswerable questions have empty gold/key_facts, every gold document is readable
             by the question's principal, and per-type minimum counts.
  bundled    the bundled Northwind files (the defaults) also keep the corpus's own conventions:
             lowercase kebab-case ids, known sources, every document dated, every answerable question
             with a grade-2 gold document, key facts and a reference answer, every principal named.
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
SOURCES = {"wiki", "tickets", "email", "meetings", "incidents", "hr", "finance"}
QTYPES = ["lookup", "entity", "multi_hop", "temporal", "modality", "global", "unanswerable"]
ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
DOC_REQUIRED = {"id": str, "title": str, "text": str}
DOC_OPTIONAL = {"source": str, "uri": str, "published_at": str}
Q_REQUIRED = {"id": str, "question": str, "type": str}
Q_OPTIONAL = {"gold": dict, "key_facts": list, "answer": str, "principal": dict}
# The bundled corpus's own conventions (see the module docstring), on top of the documented format.
BUNDLED_DOC_FIELDS = ("source", "uri", "published_at")
BUNDLED_Q_FIELDS = ("gold", "key_facts", "answer", "principal")

problems: list[str] = []


def problem(msg: str) -> None:
    problems.append(msg)


def read_jsonl(path: Path, what: str) -> list[dict]:
    rows = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        problem(f"{what}: cannot read {path}: {exc}")
        return rows
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem(f"{what}: not valid UTF-8: {exc}")
        return rows
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problem(f"{what} line {n}: invalid JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            problem(f"{what} line {n}: not a JSON object")
            continue
        obj["_line"] = n
        rows.append(obj)
    return rows


def acl_is_wellformed(acl) -> bool:
    if not isinstance(acl, dict) or set(acl) - {"groups", "users"}:
        return False
    for key in ("groups", "users"):
        val = acl.get(key, [])
        if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
            return False
    return True


def check_fields(row: dict, required: dict, optional: dict, must: tuple[str, ...], where: str) -> None:
    """Required fields present, non-empty where strings; optional ones of the right type when present; `must`
    (bundled conventions) present."""
    for field, typ in {**required, **optional}.items():
        if field not in row:
            if field in required or field in must:
                problem(f"{where}: missing field {field!r}")
            continue
        value = row[field]
        if not isinstance(value, typ) or (typ is str and not value.strip()):
            problem(f"{where}: invalid field {field!r} (want a {'non-empty string' if typ is str else typ.__name__})")


def is_iso_timestamp(value: str) -> bool:
    """An ISO 8601 date or date-time, as kgrag's ingest accepts (`2024-05-01`, `2024-05-01T09:30:00Z`)."""
    try:
        dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def can_read(doc: dict, principal: dict) -> bool:
    """Reference ACL semantics: no acl -> public; well-formed acl -> user listed or
    a shared group; malformed acl -> private (admins only)."""
    if principal.get("admin") is True:
        return True
    if "acl" not in doc:
        return True
    acl = doc["acl"]
    if not acl_is_wellformed(acl):
        return False
    if principal.get("user") in acl.get("users", []):
        return True
    return bool(set(principal.get("groups", [])) & set(acl.get("groups", [])))


def check_docs(docs: list[dict], *, bundled: bool = False) -> tuple[dict, list[str]]:
    by_id: dict[str, dict] = {}
    malformed: list[str] = []
    for d in docs:
        where = f"document line {d['_line']}"
        check_fields(d, DOC_REQUIRED, DOC_OPTIONAL, BUNDLED_DOC_FIELDS if bundled else (), where)
        did = d.get("id")
        if isinstance(did, str):
            where = f"document {did!r}"
            if bundled and not ID_RE.match(did):
                problem(f"{where}: id is not lowercase kebab-case")
            if did in by_id:
                problem(f"{where}: duplicate id")
            by_id[did] = d
        if bundled and "source" in d and d["source"] not in SOURCES:
            problem(f"{where}: unknown source {d.get('source')!r}")
        published = d.get("published_at")
        if isinstance(published, str) and published.strip() and not is_iso_timestamp(published):
            problem(f"{where}: published_at is not an ISO 8601 date or date-time")
        if "acl" in d and not acl_is_wellformed(d["acl"]):
            malformed.append(str(did))
    return by_id, malformed


_THOUSANDS = re.compile(r"(?<=\d)[,\u00a0\u202f ](?=\d{3}(?!\d))")
_DASHES = str.maketrans(
    {
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
    }
)


def value_in(value: str, text: str) -> bool:
    """As kgrag's eval matches answer values: whole tokens, case-folded, thousands separators ignored."""

    def norm(t: str) -> str:
        return _THOUSANDS.sub("", re.sub(r"\s+", " ", t.translate(_DASHES)).strip().casefold())

    return re.search(rf"(?<!\w){re.escape(norm(value))}(?!\w)", norm(text)) is not None


def check_questions(qs: list[dict], docs: dict, min_per_type: int, *, bundled: bool = False) -> collections.Counter:
    seen: set[str] = set()
    counts: collections.Counter = collections.Counter()
    for q in qs:
        where = f"question line {q['_line']}"
        check_fields(q, Q_REQUIRED, Q_OPTIONAL, BUNDLED_Q_FIELDS if bundled else (), where)
        qid = q.get("id")
        if isinstance(qid, str):
            where = f"question {qid!r}"
            if qid in seen:
                problem(f"{where}: duplicate id")
            seen.add(qid)
        qtype = q.get("type")
        if qtype not in QTYPES:
            problem(f"{where}: unknown type {qtype!r}")
        acl_denied = q.get("acl_denied", False)
        if acl_denied not in (True, False):
            problem(f"{where}: acl_denied must be a boolean")
        counts["unanswerable (acl_denied)" if acl_denied else str(qtype)] += 1
        gold = q.get("gold") if isinstance(q.get("gold"), dict) else {}
        facts = q.get("key_facts") if isinstance(q.get("key_facts"), list) else []
        principal = q.get("principal") if isinstance(q.get("principal"), dict) else {}
        if "principal" in q and (
            not isinstance(principal.get("user", ""), str)
            or not isinstance(principal.get("groups", []), list)
            or not isinstance(principal.get("admin", False), bool)
        ):
            problem(f"{where}: principal wants 'user' (string), 'groups' (list), 'admin' (boolean)")
        if bundled and not isinstance(principal.get("user"), str):
            problem(f"{where}: principal needs 'user' (string) and 'groups' (list)")
        if qtype == "unanswerable":
            if gold or facts:
                problem(f"{where}: unanswerable question must have empty gold and key_facts")
            continue
        if acl_denied:
            problem(f"{where}: acl_denied questions must have type 'unanswerable'")
        if bundled and not gold:
            problem(f"{where}: answerable question has no gold documents")
        if bundled and 2 not in gold.values():
            problem(f"{where}: no gold document with grade 2")
        if bundled and not facts:
            problem(f"{where}: answerable question has no key_facts")
        for doc_id, grade in gold.items():
            if doc_id not in docs:
                problem(f"{where}: gold id {doc_id!r} does not exist")
            elif not can_read(docs[doc_id], principal):
                problem(f"{where}: gold document {doc_id!r} is not readable by the principal")
            if grade not in (1, 2) or isinstance(grade, bool):
                problem(f"{where}: grade for {doc_id!r} must be 1 or 2")
        texts = [docs[i]["text"] for i in gold if i in docs]
        for fact in facts:
            if not isinstance(fact, str) or not fact:
                problem(f"{where}: key fact must be a non-empty string")
                continue
            if not any(fact in t for t in texts):
                problem(f"{where}: key fact not found verbatim in any gold doc: {fact[:70]!r}")
            n_words = len(fact.split())
            if not 8 <= n_words <= 25:
                problem(f"{where}: key fact has {n_words} words (want 8-25): {fact[:70]!r}")
        if len(facts) > 3:
            problem(f"{where}: more than 3 key facts")
        if q.get("split") is not None and q.get("split") not in ("dev", "test"):
            problem(f"{where}: split must be 'dev' or 'test'")
        if len(q.get("conflict_values") or []) == 1:
            problem(f"{where}: conflict_values needs at least two competing values")
        for name in ("answer_values", "outdated_values", "plan_values", "conflict_values"):
            values = q.get(name, [])
            if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
                problem(f"{where}: {name} must be a list of non-empty strings")
        if q.get("outdated_values") and not q.get("answer_values"):
            problem(f"{where}: outdated_values without answer_values")
        named = ("answer_values", "outdated_values", "plan_values", "conflict_values")
        for value in [v for name in named for v in q.get(name, [])]:
            if isinstance(value, str) and not any(value_in(value, t) for t in texts):
                problem(f"{where}: answer value {value!r} is in no gold document")
    for t in QTYPES:
        if counts[t] < min_per_type:
            problem(f"questions: only {counts[t]} of type {t!r} (minimum {min_per_type})")
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=HERE / "documents.jsonl")
    ap.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    ap.add_argument(
        "--min-per-type",
        type=int,
        default=6,
        help="minimum questions per type (acl_denied ones do not count towards unanswerable)",
    )
    args = ap.parse_args()

    bundled = args.docs.resolve() == (HERE / "documents.jsonl").resolve()
    docs = read_jsonl(args.docs, "documents")
    by_id, malformed = check_docs(docs, bundled=bundled)
    qs = read_jsonl(args.questions, "questions")
    counts = check_questions(qs, by_id, args.min_per_type, bundled=bundled)

    print(f"documents: {len(docs)} ({args.docs})")
    for src, n in sorted(collections.Counter(str(d.get("source", "jsonl")) for d in docs).items()):
        print(f"  {src:<10} {n}")
    public = sum(1 for d in docs if "acl" not in d)
    print(f"  public (no acl): {public}, restricted: {len(docs) - public}, malformed acl: {malformed}")
    dates = sorted(str(d["published_at"]) for d in docs if d.get("published_at"))
    if dates:
        print(f"  published_at: {dates[0]} .. {dates[-1]}")
    print(f"questions: {len(qs)} ({args.questions})")
    for t in [*QTYPES, "unanswerable (acl_denied)"]:
        print(f"  {t:<26} {counts[t]}")

    if problems:
        print(f"\n{len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print("\nOK: no problems found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
