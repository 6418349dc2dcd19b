"""The web app at `/ui`: server-rendered pages over the same `/v1` API and the same bearer token
(docs/adr/0010-web-app-stack.md, docs/web-app.md)."""

from kgrag_query_api.ui.mount import mount_ui

__all__ = ["mount_ui"]
