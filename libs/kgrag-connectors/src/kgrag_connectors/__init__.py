"""kgrag connector SDK: post change events from where documents live to kgrag (docs/connector-sdk.md)."""

from kgrag_connectors.checkpoint import Checkpoint, FileCheckpoint, MemoryCheckpoint
from kgrag_connectors.client import DeliveryReport, EventResult, KgragIngestClient, RetryPolicy
from kgrag_connectors.events import Acl, ChangeEvent, DocumentChanged, DocumentDeleted

__all__ = [
    "Acl",
    "ChangeEvent",
    "Checkpoint",
    "DeliveryReport",
    "DocumentChanged",
    "DocumentDeleted",
    "EventResult",
    "FileCheckpoint",
    "KgragIngestClient",
    "MemoryCheckpoint",
    "RetryPolicy",
]
