"""Deterministic synthetic corpora for benchmarks (no randomness from the process: seeded generators)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np

from kgrag_core.acl import PUBLIC_ACL, acl_from_source
from kgrag_core.documents import SourceDocument

WORDS = [
    "atlas",
    "beacon",
    "harbor",
    "routing",
    "warehouse",
    "invoice",
    "customer",
    "vendor",
    "outage",
    "incident",
    "latency",
    "capacity",
    "pallet",
    "carrier",
    "freight",
    "shipment",
    "tracking",
    "portal",
    "database",
    "migration",
    "budget",
    "forecast",
    "quarter",
    "contract",
    "renewal",
    "onboarding",
    "payroll",
    "benefits",
    "security",
    "audit",
    "compliance",
    "retention",
    "policy",
    "backup",
    "restore",
    "cluster",
    "node",
    "deploy",
    "release",
    "rollback",
    "alert",
    "pager",
    "oncall",
    "runbook",
    "escalation",
    "ticket",
    "priority",
    "severity",
    "resolution",
    "rotterdam",
    "hamburg",
    "chicago",
    "dallas",
    "lyon",
    "madrid",
    "singapore",
    "office",
    "lease",
    "headcount",
    "hiring",
    "training",
    "review",
    "pricing",
    "discount",
    "margin",
    "revenue",
    "cost",
    "savings",
    "supplier",
    "logistics",
    "dock",
    "truck",
    "container",
    "customs",
    "tariff",
    "sensor",
    "scanner",
    "barcode",
    "label",
    "inventory",
    "stock",
    "reorder",
    "threshold",
    "demand",
    "season",
    "peak",
    "holiday",
    "weekend",
    "schema",
    "index",
    "query",
    "cache",
    "queue",
    "kafka",
    "worker",
    "retry",
    "timeout",
    "error",
    "metric",
    "dashboard",
    "report",
    "analysis",
]


def synthetic_documents(
    count: int, *, seed: int = 7, sections: int = 3, paragraphs: int = 3, words: int = 60
) -> Iterator[SourceDocument]:
    rng = random.Random(seed)
    groups = [None, None, {"groups": ["engineering"]}, {"groups": ["finance"]}]
    for i in range(count):
        parts = [f"# Synthetic document {i}\n"]
        for s in range(sections):
            parts.append(f"\n## Section {s} {rng.choice(WORDS)}\n")
            for _ in range(paragraphs):
                parts.append("\n" + " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + ".\n")
        acl_raw = groups[i % len(groups)]
        yield SourceDocument(
            doc_id=f"synthetic-{i:06d}",
            source="bench",
            uri=f"bench://{i}",
            title=f"Synthetic document {i}",
            body="".join(parts).encode("utf-8"),
            acl=acl_from_source(acl_raw) if acl_raw else PUBLIC_ACL,
        )


def synthetic_texts(count: int, *, seed: int = 11, words: int = 80) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count)]


def bag_of_words_vectors(texts: list[str], dimension: int, *, seed: int = 3) -> np.ndarray:
    """Unit vectors from summed per-word random vectors: cheap, deterministic, with real neighbourhoods."""
    rng = np.random.default_rng(seed)
    table = {w: rng.standard_normal(dimension).astype(np.float32) for w in WORDS}
    out = np.zeros((len(texts), dimension), dtype=np.float32)
    for i, text in enumerate(texts):
        for w in text.split():
            vec = table.get(w)
            if vec is not None:
                out[i] += vec
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: np.ndarray = out / norms
    return normalised
