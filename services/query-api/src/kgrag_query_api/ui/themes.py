"""Themes: the communities behind global questions (`GET /v1/communities?level=`, `/v1/communities/{id}`),
browsed by level, each with its summary, citations and members, as the caller's token sees them.

The communities API is issue 12's; a server without it (404 on the route), or without communities yet, shows
"no themes yet" rather than an error. The view reads its fields defensively for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse

from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import MAX_KEY_CHARS
from kgrag_query_api.ui.entity_view import UI_KEY
from kgrag_query_api.ui.routes import Api, error_fragment
from kgrag_query_api.ui.templating import fragment, page

SECTION = "/ui/themes"
CommunityId = Annotated[str, Path(max_length=MAX_KEY_CHARS, pattern=UI_KEY)]


@dataclass(frozen=True, slots=True)
class Citation:
    doc_id: str
    title: str
    quote: str
    start: int | None
    end: int | None


@dataclass(frozen=True, slots=True)
class Member:
    entity_id: str
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class Theme:
    community_id: str
    level: int | None
    title: str
    size: int
    stale: bool
    summary: tuple[str, ...]  # sentences (or one paragraph)
    citations: tuple[Citation, ...]
    members: tuple[Member, ...]
    parent_id: str | None
    children: tuple[str, ...]


def _members(raw: Any) -> tuple[Member, ...]:
    out = []
    for m in raw or []:
        if isinstance(m, Mapping):
            out.append(
                Member(
                    str(m.get("entity_id") or ""),
                    str(m.get("name") or m.get("entity_id") or ""),
                    str(m.get("type") or ""),
                )
            )
        else:
            out.append(Member(str(m), str(m), ""))
    return tuple(out)


def _citations(raw: Any) -> tuple[Citation, ...]:
    out = []
    for c in raw or []:
        if not isinstance(c, Mapping):
            continue
        span = c.get("span") if isinstance(c.get("span"), list | tuple) else None
        out.append(
            Citation(
                doc_id=str(c.get("doc_id") or ""),
                title=str(c.get("title") or c.get("doc_id") or ""),
                quote=str(c.get("quote") or c.get("text") or ""),
                start=int(span[0]) if span and len(span) == 2 else None,
                end=int(span[1]) if span and len(span) == 2 else None,
            )
        )
    return tuple(out)


def _summary(raw: Any) -> tuple[tuple[str, ...], Any]:
    """Sentences and any citations carried inside the summary object."""
    if isinstance(raw, str):
        return ((raw,) if raw else ()), None
    if isinstance(raw, Mapping):
        # An answer's `sentences`, or the caller's community summary (`GET /v1/communities/{id}`), whose
        # points are its `summary` list.
        sentences = raw.get("sentences", raw.get("summary"))
        if isinstance(sentences, list):
            texts = tuple(str(s.get("text") if isinstance(s, Mapping) else s) for s in sentences)
        else:
            texts = (str(raw.get("text") or ""),) if raw.get("text") else ()
        return texts, raw.get("citations")
    return (), None


def theme_view(c: Mapping[str, Any]) -> Theme:
    members = _members(c.get("members"))
    raw_summary = c.get("summary")
    sentences, inner_citations = _summary(raw_summary)
    summary_title = raw_summary.get("title") if isinstance(raw_summary, Mapping) else None
    title = str(
        c.get("title") or summary_title or ", ".join(m.name for m in members[:3]) or c.get("community_id") or ""
    )
    size = c.get("size", c.get("member_count"))
    level = c.get("level")
    return Theme(
        community_id=str(c.get("community_id") or c.get("id") or ""),
        level=int(level) if isinstance(level, int) else None,
        title=title,
        size=int(size) if isinstance(size, int) else len(members),
        stale=bool(c.get("stale")),
        summary=sentences,
        citations=_citations(c.get("citations") or inner_citations),
        members=members,
        parent_id=str(c["parent_id"]) if c.get("parent_id") else None,
        children=tuple(str(x) for x in c.get("children") or []),
    )


def themes_of(body: Any) -> list[Theme]:
    items = body.get("communities") if isinstance(body, Mapping) else body
    return [theme_view(c) for c in items or [] if isinstance(c, Mapping)]


def theme_router(who_dep: Callable[..., Principal]) -> APIRouter:
    del who_dep  # fragments authenticate through the API they call
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/themes")
    def themes_page(request: Request, level: Annotated[int, Query(ge=0, le=10)] = 0) -> HTMLResponse:
        return page(request, "themes.html", title="Themes", section=SECTION, level=level)

    @router.get("/ui/themes/{community_id}")
    def theme_page(request: Request, community_id: CommunityId) -> HTMLResponse:
        return page(request, "theme_page.html", title="Theme", section=SECTION, community_id=community_id)

    @router.get("/ui/fragments/themes")
    async def themes(request: Request, api: Api, level: Annotated[int, Query(ge=0, le=10)] = 0) -> HTMLResponse:
        answer = await api.get("/v1/communities", {"level": level})
        # No communities API on this server (no such route), or communities switched off: nothing to show.
        if answer.error.get("code") in ("NOT_FOUND", "CONFIGURATION_INVALID") and not answer.ok:
            return fragment(request, "fragments/themes.html", themes=[], level=level, levels=[], missing=True)
        if not answer.ok:
            return error_fragment(request, answer)
        levels = answer.body.get("levels") if isinstance(answer.body, Mapping) else None
        return fragment(
            request,
            "fragments/themes.html",
            themes=themes_of(answer.body),
            level=level,
            levels=levels or [],
            missing=False,
        )

    @router.get("/ui/fragments/themes/{community_id}")
    async def theme(request: Request, api: Api, community_id: CommunityId) -> HTMLResponse:
        answer = await api.get(f"/v1/communities/{community_id}")
        if not answer.ok:
            return error_fragment(request, answer)
        return fragment(request, "fragments/theme.html", theme=theme_view(answer.body))

    return router
