"""`python -m kgrag_deletion_worker`: apply documents.deleted events to every store (settings from KGRAG_*)."""

from kgrag_core.events import DOCUMENTS_DELETED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import run_worker

SERVICE = "deletion-worker"


def main() -> None:
    settings = KgragSettings()
    run_worker(
        SERVICE, lambda s: ChunkIndexerHandler(s.indexer(settings), name=SERVICE, topics=(DOCUMENTS_DELETED,)), settings
    )


if __name__ == "__main__":
    main()
