"""A small hand-written corpus for pipeline tests (the bundled Northwind corpus is tested separately)."""

from __future__ import annotations

from kgrag_core.acl import acl_from_source
from kgrag_core.documents import SourceDocument

ATLAS = """# Atlas routing engine

Atlas computes delivery routes for every Northwind truck.

## Ownership

The on-call owner of Atlas is Priya Raman since March 2024.

## Capacity

Atlas plans 12,000 routes per night on four worker nodes.
"""

HARBOR = """# Harbor

Harbor is the warehouse management system used in Rotterdam.

## Outages

In May 2024 Harbor was down for six hours because a certificate expired.
"""

SALARY = """# Compensation bands 2025

The senior engineer band tops out at 142,000 euros, a confidential figure.
"""


def doc(doc_id: str, text: str, *, title: str = "", acl: object = None) -> SourceDocument:
    return SourceDocument(
        doc_id=doc_id,
        source="test",
        uri=f"test://{doc_id}",
        title=title or doc_id,
        body=text.encode("utf-8"),
        acl=acl_from_source(acl),
    )


def corpus() -> list[SourceDocument]:
    return [
        doc("atlas", ATLAS, title="Atlas routing engine"),
        doc("harbor", HARBOR, title="Harbor", acl={"groups": ["engineering"]}),
        doc("salary", SALARY, title="Compensation bands 2025", acl={"groups": ["hr"]}),
    ]
