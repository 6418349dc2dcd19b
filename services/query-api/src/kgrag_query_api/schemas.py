"""Request bodies of the HTTP API (responses are the core's documented dicts)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kgrag_core.retrieval.hybrid import SearchMode


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=4000)
    top_k: int = Field(10, ge=1, le=100)
    mode: SearchMode = SearchMode.HYBRID


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=4000)
    evidence_chunks: int = Field(8, ge=1, le=40)


class IngestDocumentRequest(BaseModel):
    """A change event from a source system. Give `text`, or `body_b64` for exact bytes."""

    model_config = ConfigDict(extra="forbid")
    doc_id: str = Field(min_length=1, max_length=256)
    source: str = Field("api", min_length=1, max_length=128)
    title: str = Field(max_length=1024)
    text: str | None = None
    body_b64: str | None = None
    uri: str | None = Field(None, max_length=4096)
    acl: Any = Field(None, description='{"groups": [...], "users": [...]}; absent = everyone; malformed = private')
    modified_at: datetime | None = None
    media_type: str = "text/markdown"


class AclChangeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    doc_id: str = Field(min_length=1, max_length=256)
    acl: Any = Field(None, description='{"groups": [...], "users": [...]}; absent = everyone; malformed = private')
