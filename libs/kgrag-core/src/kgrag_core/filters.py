"""Search filters: which sources and document dates a search may draw candidates from.

A filter runs inside candidate generation, like the ACL filter: every `VectorIndex` and `KeywordIndex`
applies it in the engine's own query (a payload filter, a filter clause), the graph route admits only
evidence chunks of matching documents, and hydration rechecks it. It is never applied to a finished
top-k, which would leave fewer results than asked for and let excluded chunks push included ones out.

The date is the document's date (`Chunk.doc_time`, the document's `modified_at`). `as_of` adds the
other clock: documents dated after it are excluded, and claims are read as they stood on that day. A
document without a date has no place in a dated range, so any date bound excludes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from kgrag_core.errors import ErrorCode, KgragError

MAX_SOURCES = 64  # sources one filter may name; bounded like every other list a request carries


@dataclass(frozen=True, slots=True)
class SearchFilters:
    sources: tuple[str, ...] = ()  # sorted and unique; empty: every source
    date_from: date | None = None  # document date on or after this day
    date_to: date | None = None  # document date on or before this day
    as_of: date | None = None  # what the documents said (and what was true) at the end of this day

    @classmethod
    def build(
        cls,
        *,
        sources: Iterable[str] = (),
        date_from: date | None = None,
        date_to: date | None = None,
        as_of: date | None = None,
    ) -> SearchFilters:
        """A checked filter: INVALID_FILTER for an inverted range, an empty source name or too many sources."""
        if isinstance(sources, str):
            raise TypeError("sources must be a sequence of strings, not a string")
        names = tuple(sorted(set(sources)))
        if any(not name.strip() for name in names):
            raise KgragError(ErrorCode.INVALID_FILTER, "A source name in filters.sources is empty.")
        if len(names) > MAX_SOURCES:
            raise KgragError(
                ErrorCode.INVALID_FILTER,
                f"filters.sources names {len(names)} sources; the maximum is {MAX_SOURCES}.",
            )
        if date_from is not None and date_to is not None and date_from > date_to:
            raise KgragError(
                ErrorCode.INVALID_FILTER,
                f"filters.time_range is inverted: from {date_from.isoformat()} is after to {date_to.isoformat()}.",
                hint="Pass from <= to (both days are included).",
            )
        if date_from is not None and as_of is not None and date_from > as_of:
            raise KgragError(
                ErrorCode.INVALID_FILTER,
                f"filters.as_of {as_of.isoformat()} is before time_range.from {date_from.isoformat()}: "
                "no document could match.",
                hint="Pass an as_of on or after the start of the range.",
            )
        return cls(names, date_from, date_to, as_of)

    @property
    def is_empty(self) -> bool:
        return not self.sources and self.date_from is None and self.date_to is None and self.as_of is None

    @property
    def has_dates(self) -> bool:
        """Whether a date bound applies (then an undated document is excluded); `date.max` alone bounds
        nothing."""
        return self.date_from is not None or any(d is not None and d < date.max for d in (self.date_to, self.as_of))

    def time_bounds(self) -> tuple[datetime | None, datetime | None]:
        """[lower, upper) in UTC for the document date: lower inclusive, upper exclusive (the day after the
        last admitted day), each None when unbounded."""
        lower = _midnight(self.date_from) if self.date_from is not None else None
        last = [d for d in (self.date_to, self.as_of) if d is not None]
        # The last day of the calendar has no day after it: nothing is later, so that side is unbounded.
        upper = _midnight(min(last) + timedelta(days=1)) if last and min(last) < date.max else None
        return lower, upper

    def admits(self, source: str, doc_time: datetime | None) -> bool:
        """Whether a chunk of a document from `source`, dated `doc_time`, is a candidate."""
        if self.sources and source not in self.sources:
            return False
        return self._admits_time(doc_time)

    def admits_day(self, day: date | None) -> bool:
        """The date bounds alone, for a day (a claim's `written_at`)."""
        return self._admits_time(_midnight(day) if day is not None else None)

    def _admits_time(self, moment: datetime | None) -> bool:
        if not self.has_dates:
            return True
        if moment is None:
            return False
        lower, upper = self.time_bounds()
        at = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        return (lower is None or at >= lower) and (upper is None or at < upper)

    def key(self) -> str:
        """A stable digest for cache keys: two filters that admit the same candidates share it."""
        if self.is_empty:
            return "-"
        lower, upper = self.time_bounds()
        raw = "\x1f".join(
            [
                ",".join(self.sources),
                lower.isoformat() if lower else "",
                upper.isoformat() if upper else "",
                self.as_of.isoformat() if self.as_of else "",
            ]
        )
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]

    def as_dict(self) -> dict[str, object]:
        return {
            "sources": list(self.sources),
            "time_range": {
                "from": self.date_from.isoformat() if self.date_from else None,
                "to": self.date_to.isoformat() if self.date_to else None,
            },
            "as_of": self.as_of.isoformat() if self.as_of else None,
        }


NO_FILTERS = SearchFilters()


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)
