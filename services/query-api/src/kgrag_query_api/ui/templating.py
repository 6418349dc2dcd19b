"""Templates and the two kinds of response the app sends: a page shell (layout, no data) and a fragment
(data, rendered for the token that asked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

HERE = Path(__file__).parent
TEMPLATES = Jinja2Templates(directory=HERE / "templates")

# No inline script or style anywhere, so a script injected into a page cannot run; that protects the token
# kept in sessionStorage (the ADR). htmx is configured (meta tag) to need neither eval nor inline styles.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

NAV = (  # (label, path): the app's sections; entity, theme and admin pages are added by their own modules
    ("Ask", "/ui"),
    ("Entities", "/ui/entities"),
    ("Themes", "/ui/themes"),
    ("Admin", "/ui/admin"),
)


def page(request: Request, template: str, *, title: str, section: str = "", **context: Any) -> HTMLResponse:
    """A page shell: the layout and whatever the URL names (ids, query), never data. Its fragments load
    with the signed-in token (static/app.js), so a logged-out page reveals nothing."""
    context = {"title": title, "section": section, "nav": NAV, **context}
    return TEMPLATES.TemplateResponse(request, template, context, headers=HEADERS)


def fragment(request: Request, template: str, *, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A piece of a page rendered from what the API answered this request's token."""
    return TEMPLATES.TemplateResponse(request, template, context, status_code=status_code, headers=HEADERS)
