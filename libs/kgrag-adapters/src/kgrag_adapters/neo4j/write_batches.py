"""Bounded write batches for a projection too large for one Neo4j transaction (a hub's scope).

A transaction holds everything it writes in the server's heap until it commits: a hub with 250,000 edges
ran a 512 MiB heap out of memory in one. These helpers cut a scope's rows into batches of at most `limit`
units of work (a row, plus one per document and alias an entity row links), splitting an entity row whose
documents or aliases alone exceed the limit into pieces that carry the same properties: writing the pieces
one after another gives the same node and links as writing the row whole (MERGE and SET are idempotent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

_T = TypeVar("_T")

Row = dict[str, Any]


def entity_cost(row: Row) -> int:
    return 1 + len(row["docs"]) + len(row["aliases"])


def row_cost(row: Row) -> int:
    """An edge or claim row: the relationship or node, and its evidence arrays (one unit per ten entries)."""
    evidence = row["props"].get("ev_chunk") or ()
    return 1 + len(evidence) // 10


def split_entity_row(row: Row, limit: int) -> list[Row]:
    """The row as pieces of at most `limit` units each; every piece carries all of the row's properties."""
    if limit < 2:
        raise ValueError(f"a write batch holds at least 2 units, got {limit}")
    if entity_cost(row) <= limit:
        return [row]
    links = [("docs", d) for d in row["docs"]] + [("aliases", a) for a in row["aliases"]]
    pieces = []
    for start in range(0, len(links), limit - 1):
        part = links[start : start + limit - 1]
        pieces.append(
            {
                **row,
                "docs": [v for k, v in part if k == "docs"],
                "aliases": [v for k, v in part if k == "aliases"],
            }
        )
    return pieces


def bounded_batches(rows: Sequence[_T], cost: Callable[[_T], int], limit: int) -> Iterator[list[_T]]:
    """Consecutive rows in groups whose cost stays within `limit` (a row over it alone makes a group)."""
    batch: list[_T] = []
    total = 0
    for row in rows:
        c = cost(row)
        if batch and total + c > limit:
            yield batch
            batch, total = [], 0
        batch.append(row)
        total += c
    if batch:
        yield batch


def scope_cost(entity_rows: Sequence[Row], edge_rows: Sequence[Row], claim_rows: Sequence[Row]) -> int:
    return (
        sum(entity_cost(r) for r in entity_rows)
        + sum(row_cost(r) for r in edge_rows)
        + sum(row_cost(r) for r in claim_rows)
    )
