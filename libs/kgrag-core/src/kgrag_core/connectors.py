"""What connectors yield: documents, or failures as values.

A connector never raises for one bad item: it yields a `ConnectorFailure` with a stable error code and
goes on, so one broken file cannot stop a whole ingest run (invariant 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class ConnectorFailure:
    uri: str
    doc_id: str | None
    code: ErrorCode
    message: str


ConnectorItem: TypeAlias = SourceDocument | ConnectorFailure
