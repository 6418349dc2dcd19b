"""The ask/search form's filter fields as the API's `filters` object (the API checks them)."""

from __future__ import annotations

from typing import Any


def api_filters(sources: str, date_from: str, date_to: str, as_of: str) -> dict[str, Any] | None:
    """None when no filter is set; empty fields are absent, so the API's own validation judges the rest."""
    out: dict[str, Any] = {}
    named = [s.strip() for s in sources.split(",") if s.strip()]
    if named:
        out["sources"] = named
    span = {k: v for k, v in (("from", date_from.strip()), ("to", date_to.strip())) if v}
    if span:
        out["time_range"] = span
    if as_of.strip():
        out["as_of"] = as_of.strip()
    return out or None
