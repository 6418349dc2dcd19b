"""Defaults and maxima for every bounded piece of work (invariant 6)."""

from __future__ import annotations

from dataclasses import dataclass

from kgrag_core.errors import ErrorCode, KgragError


@dataclass(frozen=True, slots=True)
class Bound:
    name: str
    default: int
    maximum: int

    def resolve(self, requested: int | None) -> int:
        """The value to use; a request above the maximum is an error the caller sees, not a silent cap."""
        if requested is None:
            return self.default
        if requested < 1:
            raise KgragError(ErrorCode.INVALID_QUERY, f"{self.name} must be at least 1, got {requested}")
        if requested > self.maximum:
            raise KgragError(
                ErrorCode.LIMIT_EXCEEDED,
                f"{self.name}={requested} is above the maximum of {self.maximum}",
                hint=f"Ask for at most {self.maximum}.",
            )
        return requested


TOP_K = Bound("top_k", 10, 100)
CANDIDATES_PER_ROUTE = Bound("candidates_per_route", 50, 500)
QUERY_CHARS = Bound("query_chars", 1000, 4000)
EVIDENCE_CHUNKS = Bound("evidence_chunks", 8, 40)
# Hops a graph walk may take on request (options.max_hops); multi-hop questions default to 3.
MAX_HOPS = Bound("max_hops", 3, 4)
