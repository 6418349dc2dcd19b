"""A small corpus of dated documents from several sources, for the filter tests (embedded and distributed)."""

from __future__ import annotations

from datetime import UTC, datetime

from kgrag_core.acl import acl_from_source
from kgrag_core.documents import SourceDocument

CAPACITY = "How many routes per night does the Atlas planner compute?"


def _doc(doc_id: str, source: str, day: datetime, text: str, acl: object = None) -> SourceDocument:
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=f"test://{doc_id}",
        title=doc_id,
        body=text.encode("utf-8"),
        acl=acl_from_source(acl),
        modified_at=day,
    )


CORPUS = [
    _doc(
        "wiki-atlas-2023",
        "wiki",
        datetime(2023, 3, 1, tzinfo=UTC),
        "# Atlas planner\n\nThe Atlas planner computes 8,000 routes per night on two worker nodes.\n",
    ),
    _doc(
        "ticket-atlas-2024",
        "tickets",
        datetime(2024, 6, 1, tzinfo=UTC),
        "# Atlas capacity upgrade\n\nSince the upgrade the Atlas planner computes 12,000 routes per night.\n",
    ),
    _doc(
        "wiki-harbor",
        "wiki",
        datetime(2024, 2, 1, tzinfo=UTC),
        "# Harbor\n\nHarbor is the warehouse system in Rotterdam; it plans no routes.\n",
    ),
    _doc(
        "hr-bands",
        "hr",
        datetime(2024, 1, 1, tzinfo=UTC),
        "# Bands\n\nThe senior engineer band tops out at 142,000 euros.\n",
        acl={"groups": ["hr"]},
    ),
]
