"""Mount the web app on the query API: pages, fragments and the static assets (package data)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from kgrag_query_api.auth import Principal
from kgrag_query_api.ui.admin import admin_router
from kgrag_query_api.ui.entities import entity_router
from kgrag_query_api.ui.routes import fragment_router, page_router
from kgrag_query_api.ui.templating import HERE
from kgrag_query_api.ui.themes import theme_router

# More sections (entities, themes, admin) add their routers here: each takes the /v1 principal dependency.
SECTIONS: list[Callable[[Callable[..., Principal]], APIRouter]] = [entity_router, theme_router, admin_router]


def mount_ui(api: FastAPI, who_dep: Callable[..., Principal]) -> None:
    api.include_router(page_router())
    api.include_router(fragment_router(who_dep))
    for section in SECTIONS:
        api.include_router(section(who_dep))
    api.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")
