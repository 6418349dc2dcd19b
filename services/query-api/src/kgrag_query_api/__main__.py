"""`python -m kgrag_query_api`: the query API on the embedded default (settings from KGRAG_*)."""

from __future__ import annotations

import os

from kgrag_query_api.server import serve_embedded
from kgrag_runtime.settings import KgragSettings


def main() -> None:
    serve_embedded(KgragSettings(), host=os.environ.get("KGRAG_HOST", "127.0.0.1"),
                   port=int(os.environ.get("KGRAG_PORT", "8000")))


if __name__ == "__main__":
    main()
