"""Events on the bus. Topics are partitioned by `doc_id`, so one document's events stay in order."""

from kgrag_core.events.model import (
    ACL_CHANGED,
    CHUNKS_CHANGED,
    DOCUMENTS_CHANGED,
    DOCUMENTS_DELETED,
    ENTITIES_CHANGED,
    GRAPH_CHANGED,
    AclChanged,
    ChunksChanged,
    DocumentChanged,
    DocumentDeleted,
    EntitiesChanged,
    GraphChanged,
    document_changed_from_source,
    source_from_document_changed,
)

__all__ = [
    "ACL_CHANGED",
    "CHUNKS_CHANGED",
    "DOCUMENTS_CHANGED",
    "DOCUMENTS_DELETED",
    "ENTITIES_CHANGED",
    "GRAPH_CHANGED",
    "AclChanged",
    "ChunksChanged",
    "DocumentChanged",
    "DocumentDeleted",
    "EntitiesChanged",
    "GraphChanged",
    "document_changed_from_source",
    "source_from_document_changed",
]
