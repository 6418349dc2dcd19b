"""The question-file format (JSONL, one question per line; see docs/evaluation.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError

QUESTION_TYPES = ("lookup", "entity", "multi_hop", "temporal", "modality", "global", "unanswerable")
SPLITS = ("dev", "test")  # dev: what is tuned on; test: reported, never tuned on


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    id: str
    question: str
    type: str
    gold: dict[str, int]  # doc_id -> grade (2 answers it, 1 helps)
    key_facts: tuple[str, ...]
    caller: Caller
    acl_denied: bool = False
    # The answer's values ("Zoë Müller", "24,500") and, for temporal questions, the values it replaced:
    # what a reader must find in the context, and must meet before any older value.
    answer_values: tuple[str, ...] = ()
    outdated_values: tuple[str, ...] = ()
    # What was only planned, proposed or hedged ("CockroachDB"): an answer must not state it as done.
    plan_values: tuple[str, ...] = ()
    # Values the sources disagree on ("Lars", "Mei"): an answer must name every one of them.
    conflict_values: tuple[str, ...] = ()
    split: str | None = None  # None: the file has no split

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


def parse_questions(lines: list[str]) -> list[EvalQuestion]:
    out: list[EvalQuestion] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as err:
            raise KgragError(ErrorCode.MALFORMED_JSON, f"line {number}: {err.msg}") from err
        try:
            principal = raw.get("principal") or {}
            gold = {str(k): int(v) for k, v in (raw.get("gold") or {}).items()}
            qtype = str(raw["type"])
            if qtype not in QUESTION_TYPES:
                raise ValueError(f"unknown type {qtype!r}; expected one of {', '.join(QUESTION_TYPES)}")
            split = raw.get("split")
            if split is not None and split not in SPLITS:
                raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
            conflict = _strings(raw, "conflict_values")
            if len(conflict) == 1:
                raise ValueError("conflict_values needs at least two competing values")
            out.append(
                EvalQuestion(
                    id=str(raw["id"]),
                    question=str(raw["question"]),
                    type=qtype,
                    gold=gold,
                    key_facts=tuple(str(f) for f in raw.get("key_facts") or []),
                    caller=Caller(
                        user=principal.get("user"),
                        groups=tuple(sorted(principal.get("groups") or [])),
                        admin=bool(principal.get("admin", False)),
                    ),
                    acl_denied=bool(raw.get("acl_denied", False)),
                    answer_values=_strings(raw, "answer_values"),
                    outdated_values=_strings(raw, "outdated_values"),
                    plan_values=_strings(raw, "plan_values"),
                    conflict_values=conflict,
                    split=split,
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise KgragError(ErrorCode.MISSING_FIELD, f"line {number}: {err}") from err
    return out


def _strings(raw: dict[str, object], name: str) -> tuple[str, ...]:
    values = raw.get(name) or []
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
        raise ValueError(f"{name} must be a list of non-empty strings")
    return tuple(values)
