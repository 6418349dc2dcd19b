"""`python -m kgrag_query_api`: the query API (settings from KGRAG_*; KGRAG_RUNTIME picks the runtime)."""

from __future__ import annotations

import os

from kgrag_query_api.server import serve_distributed, serve_embedded
from kgrag_runtime.settings import KgragSettings


def main() -> None:
    settings = KgragSettings()
    host, port = os.environ.get("KGRAG_HOST", "127.0.0.1"), int(os.environ.get("KGRAG_PORT", "8000"))
    if settings.runtime == "distributed":
        serve_distributed(settings, host=host, port=port)
    else:
        serve_embedded(settings, host=host, port=port)


if __name__ == "__main__":
    main()
