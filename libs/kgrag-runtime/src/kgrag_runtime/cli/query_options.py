"""Options of `kgrag search` and `kgrag ask` for the ask/search contract: filters, mode, hops, graph paths."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from kgrag_core.ask_modes import AskMode
from kgrag_core.filters import SearchFilters

_DAY = ["%Y-%m-%d"]

Sources = Annotated[
    list[str] | None,
    typer.Option("--source", help="Only documents from this source (repeatable).", show_default=False),
]
DateFrom = Annotated[
    datetime | None,
    typer.Option("--from", formats=_DAY, help="Only documents dated on or after this day.", show_default=False),
]
DateTo = Annotated[
    datetime | None,
    typer.Option("--to", formats=_DAY, help="Only documents dated on or before this day.", show_default=False),
]
AsOf = Annotated[
    datetime | None,
    typer.Option(
        "--as-of",
        formats=_DAY,
        help="What the documents said at the end of this day: later documents are left out.",
        show_default=False,
    ),
]
MaxHops = Annotated[
    int | None, typer.Option("--max-hops", help="Graph hops at most (1-4; default 3).", show_default=False)
]
GraphPaths = Annotated[
    bool, typer.Option("--graph-paths", help="Show the graph paths (entity, relation, entity) behind the result.")
]
Mode = Annotated[
    AskMode,
    typer.Option(
        "--mode",
        case_sensitive=False,
        help="AUTO (the router), VECTOR (hybrid only), GRAPH_ASSISTED, MULTI_HOP or GLOBAL.",
    ),
]


def filters_from(
    sources: list[str] | None, date_from: datetime | None, date_to: datetime | None, as_of: datetime | None
) -> SearchFilters | None:
    """The checked filters (INVALID_FILTER for an inverted range), or None when none is given."""
    if not sources and date_from is None and date_to is None and as_of is None:
        return None
    return SearchFilters.build(
        sources=sources or (),
        date_from=date_from.date() if date_from else None,
        date_to=date_to.date() if date_to else None,
        as_of=as_of.date() if as_of else None,
    )
