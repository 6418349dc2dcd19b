"""Request bodies of the HTTP API (responses are the core's documented dicts)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgrag_core.retrieval.hybrid import SearchMode

# Sizes and counts are checked by the core's bounds (kgrag_core.limits), so that going over a maximum
# is reported as LIMIT_EXCEEDED with the maximum, exactly as on the CLI.


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str
    top_k: int = 10
    mode: SearchMode = SearchMode.HYBRID
    graph: bool | None = Field(None, description="Route the question and add graph evidence (default: server setting).")


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str
    evidence_chunks: int = 8
    graph: bool | None = Field(None, description="Route the question and add graph evidence (default: server setting).")


class IngestDocumentRequest(BaseModel):
    """A change event from a source system. Give `text`, or `body_b64` for exact bytes."""

    model_config = ConfigDict(extra="forbid")
    doc_id: str = Field(min_length=1, max_length=256)
    source: str = Field("api", min_length=1, max_length=128)
    title: str = Field(max_length=1024)
    text: str | None = None
    body_b64: str | None = None
    uri: str | None = Field(None, max_length=4096)
    acl: Any = Field(None, description='{"groups": [...], "users": [...]}; absent = everyone; null or malformed = private')
    modified_at: datetime | None = None
    media_type: str = "text/markdown"

    @field_validator("modified_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        # A date without a zone is taken as UTC, as the connectors do, so re-posting it is a no-op.
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def raw_acl(self) -> object:
        """The ACL as sent: absent means everyone; an explicit null (or anything malformed) is private."""
        if "acl" not in self.model_fields_set:
            return None
        return self.acl if self.acl is not None else "null"


class AclChangeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    doc_id: str = Field(min_length=1, max_length=256)
    acl: Any = Field(None, description='{"groups": [...], "users": [...]}; absent = everyone; null or malformed = private')

    def raw_acl(self) -> object:
        if "acl" not in self.model_fields_set:
            return None
        return self.acl if self.acl is not None else "null"


class RerunRequest(BaseModel):
    """Re-extraction of a scope with an extractor version; a dry run unless told otherwise."""

    model_config = ConfigDict(extra="forbid")
    scope: dict[str, Any] = Field(
        default_factory=dict, description="doc_ids, sources, chunk_ids, contains_any (lists); empty means all."
    )
    extractor_version: str = Field(min_length=1, max_length=64)
    dry_run: bool = True


class EntityResolveRequest(BaseModel):
    """A name to look up among the entities the caller may see; `type` narrows it (e.g. Person)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=256)
    type: str | None = Field(None, min_length=1, max_length=64)


class EntityMergeRequest(BaseModel):
    """A hand merge: logged with its reason, reversible with a split."""

    model_config = ConfigDict(extra="forbid")
    entity_ids: list[str] = Field(min_length=2, max_length=100)
    canonical_id: str | None = Field(None, min_length=1, max_length=64, description="Default: the smallest id.")
    reason: str = Field(min_length=1, max_length=1000)


class EntitySplitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    merge_id: str = Field(min_length=1, max_length=64)


class EntityReviewRequest(BaseModel):
    """A person's decision on a queued "possibly the same" pair; `same` merges them (reversibly)."""

    model_config = ConfigDict(extra="forbid")
    a: str = Field(min_length=1, max_length=64)
    b: str = Field(min_length=1, max_length=64)
    same: bool
