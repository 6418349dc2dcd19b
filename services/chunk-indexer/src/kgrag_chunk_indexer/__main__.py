"""`python -m kgrag_chunk_indexer`: index documents.changed events (settings from KGRAG_*)."""

from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import run_worker

SERVICE = "chunk-indexer"


def main() -> None:
    settings = KgragSettings()
    run_worker(
        SERVICE, lambda s: ChunkIndexerHandler(s.indexer(settings), name=SERVICE, topics=(DOCUMENTS_CHANGED,)), settings
    )


if __name__ == "__main__":
    main()
