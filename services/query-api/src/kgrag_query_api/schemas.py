"""Request bodies of the HTTP API (responses are the core's documented dicts).

Every field says in the schema what the server accepts — lengths, ranges, enums and character patterns
(kgrag_query_api.patterns) — and the models enforce exactly that, with Python `re` semantics, so a
schema-valid request is never refused for its shape and a schema-invalid one always is.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from kgrag_core.ask_modes import AskMode
from kgrag_core.errors import ErrorCode
from kgrag_core.filters import MAX_SOURCES, SearchFilters
from kgrag_core.limits import EVIDENCE_CHUNKS, MAX_HOPS, QUERY_CHARS, TOP_K
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_core.tracing.model import (
    MAX_COMMENT_CHARS,
    MAX_RATING,
    MIN_RATING,
    FeedbackIssue,
    parse_comment,
    parse_issue,
    parse_rating,
)
from kgrag_query_api.patterns import (
    BODY_TEXT,
    DOC_ID,
    KEY,
    LABEL,
    MAX_DOC_ID,
    MAX_KEY_CHARS,
    OPTIONAL_TEXT,
    SOURCE,
    TEXT,
    check,
    has_lone_surrogate,
)
from kgrag_runtime.extraction_admin import scope_from

_STRICT = ConfigDict(extra="forbid", regex_engine="python-re")


class _Strict(BaseModel):
    """Forbids unknown fields, checks patterns with Python `re`, and refuses lone surrogates anywhere.

    Flags are strict (`1` is not `true`) and counts are `Count`s (`true` is not 1; `20.0` is 20, as JSON
    Schema's `integer` says).
    """

    model_config = _STRICT

    @field_validator("*", mode="after")
    @classmethod
    def _no_lone_surrogates(cls, value: Any) -> Any:
        # JSON may spell one ("\ud800"); it is no character, so no store or encoder can take it.
        texts = value if isinstance(value, list) else [value]
        if any(isinstance(t, str) and has_lone_surrogate(t) for t in texts):
            raise ValueError("a string holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape)")
        return value

    @field_validator("query", "question", "extractor_version", mode="after", check_fields=False)
    @classmethod
    def _coded(cls, value: str, info: ValidationInfo) -> str:
        limit = {"extractor_version": 64}.get(str(info.field_name), QUERY_CHARS.maximum)
        return check(value, TEXT, field=str(info.field_name), max_chars=limit, code=ErrorCode.INVALID_QUERY)


_ACL_DESCRIPTION = (
    '{"groups": [...], "users": [...]}; absent = everyone; null or malformed = private. A name with a control or'
    " format character, surrounding whitespace or over 256 characters is refused (INVALID_PRINCIPAL)."
)


def _a_number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("a count must be a JSON number, not a string or true/false")
    return value


Count = Annotated[int, BeforeValidator(_a_number)]
"""An integer as JSON Schema means it: integral numbers (20 or 20.0), never a boolean or a string."""


def _query_text(max_chars: int) -> Any:
    """A free-text field whose refusals keep the codes the core gives them (INVALID_QUERY, LIMIT_EXCEEDED):
    the pattern is published in the schema and applied by `_Strict._coded` (a KgragError passes through
    pydantic untouched and reaches the error handler with its code)."""
    return Field(json_schema_extra={"pattern": TEXT, "minLength": 1, "maxLength": max_chars})


def _a_day_string(value: object) -> object:
    # The schema says a date string: a number (which pydantic would read as a Unix time) is refused.
    if value is not None and not isinstance(value, str):
        raise ValueError("a date must be an ISO 8601 date string (YYYY-MM-DD)")
    return value


Day = Annotated[date, BeforeValidator(_a_day_string)]


class TimeRange(_Strict):
    """The document date's range; both days are included. from after to is refused (INVALID_FILTER)."""

    model_config = ConfigDict(**_STRICT, populate_by_name=False)

    date_from: Day | None = Field(None, alias="from", description="On or after this day (YYYY-MM-DD).")
    date_to: Day | None = Field(None, alias="to", description="On or before this day (YYYY-MM-DD).")


class Filters(_Strict):
    """Run inside candidate generation in every route (never after it), and part of the answer-cache key."""

    sources: list[Annotated[str, Field(min_length=1, max_length=128, pattern=SOURCE)]] = Field(
        default_factory=list,
        max_length=MAX_SOURCES,
        description="Only documents from these sources; a source with no document you can read is refused "
        "(422 INVALID_FILTER).",
    )
    time_range: TimeRange | None = None
    as_of: Day | None = Field(
        None,
        description="What the documents said, and what was true, at the end of this day: later documents are "
        "excluded and claims are read as they stood then.",
    )

    def to_core(self) -> SearchFilters:
        """The core's checked filter (INVALID_FILTER for an inverted range)."""
        span = self.time_range or TimeRange()
        return SearchFilters.build(
            sources=self.sources, date_from=span.date_from, date_to=span.date_to, as_of=self.as_of
        )


def core_filters(filters: Filters | None) -> SearchFilters | None:
    return filters.to_core() if filters is not None else None


class SearchRequest(_Strict):
    query: str = _query_text(QUERY_CHARS.maximum)
    top_k: Count = Field(TOP_K.default, ge=1, le=TOP_K.maximum)
    mode: SearchMode = SearchMode.HYBRID
    graph: bool | None = Field(
        None, strict=True, description="Route the question and add graph evidence (default: server setting)."
    )
    filters: Filters | None = None
    include_entities: bool = Field(
        False, strict=True, description="List the entities the query links to (entity_id, name, type, score)."
    )
    text_graph: bool | None = Field(
        None,
        strict=True,
        description="Walk the text graph on top of hybrid search (default: KGRAG_TEXT_GRAPH); limits.text_graph "
        "says whether it was used, why not, or that it degraded.",
    )


class AskOptions(_Strict):
    # Constraints before the validator, so the schema publishes them inside the union (minimum/maximum).
    max_hops: Annotated[int, Field(ge=1, le=MAX_HOPS.maximum), BeforeValidator(_a_number)] | None = Field(
        None, description=f"Graph hops at most (default {MAX_HOPS.default})."
    )
    include_graph_paths: bool = Field(
        False,
        strict=True,
        description="Add graph_evidence: entity-relation-entity chains, each hop with its chunks and confidence.",
    )
    stream: bool = Field(
        False, strict=True, description="Answer as server-sent events, each verified sentence as it is ready."
    )


class AskRequest(_Strict):
    question: str = _query_text(QUERY_CHARS.maximum)
    evidence_chunks: Count = Field(EVIDENCE_CHUNKS.default, ge=1, le=EVIDENCE_CHUNKS.maximum)
    graph: bool | None = Field(
        None, strict=True, description="Route the question and add graph evidence (default: server setting)."
    )
    mode: AskMode = Field(
        AskMode.AUTO,
        description="AUTO (the router), VECTOR (hybrid search only), GRAPH_ASSISTED, MULTI_HOP, or GLOBAL "
        "(cited themes from community views; hybrid with global_fallback: true while no communities exist).",
    )
    filters: Filters | None = None
    options: AskOptions | None = None


class _IngestFields(_Strict):
    doc_id: str = Field(min_length=1, max_length=MAX_DOC_ID, pattern=DOC_ID)
    source: str = Field("api", min_length=1, max_length=128, pattern=SOURCE)
    title: str = Field(max_length=1024, pattern=LABEL)
    uri: str | None = Field(None, max_length=4096, pattern=LABEL)
    acl: Any = Field(None, description=_ACL_DESCRIPTION)
    modified_at: datetime | None = None
    media_type: str = Field("text/markdown", min_length=1, max_length=128, pattern=TEXT)

    @field_validator("modified_at", mode="before")
    @classmethod
    def _a_date_string(cls, value: object) -> object:
        # The schema says date-time string: a number (which pydantic would read as a Unix time) is refused.
        if value is not None and not isinstance(value, str | datetime):
            raise ValueError("modified_at must be an ISO 8601 date-time string")
        return value

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


class TextDocumentRequest(_IngestFields):
    """A change event whose body is text (sent as UTF-8)."""

    text: str = Field(min_length=1, pattern=BODY_TEXT, description="Over KGRAG_MAX_DOCUMENT_BYTES as UTF-8: 413.")


class BytesDocumentRequest(_IngestFields):
    """A change event whose body is exact bytes, base64-encoded."""

    body_b64: str = Field(pattern=r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?(?![\s\S])")


IngestDocumentRequest = TextDocumentRequest | BytesDocumentRequest


class AclChangeRequest(_Strict):
    doc_id: str = Field(min_length=1, max_length=MAX_DOC_ID, pattern=DOC_ID)
    acl: Any = Field(None, description=_ACL_DESCRIPTION)

    def raw_acl(self) -> object:
        if "acl" not in self.model_fields_set:
            return None
        return self.acl if self.acl is not None else "null"


_Name = Annotated[str, Field(pattern=OPTIONAL_TEXT)]


class RerunScope(_Strict):
    """What to re-extract; every list empty (the default) means everything."""

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, value: Any) -> Any:
        # The core's checks first, so an unknown key or a non-list keeps its INVALID_QUERY code.
        if isinstance(value, Mapping):
            scope_from(value)
        return value

    doc_ids: list[_Name] = Field(default_factory=list)
    sources: list[_Name] = Field(default_factory=list)
    chunk_ids: list[_Name] = Field(default_factory=list)
    contains_any: list[_Name] = Field(default_factory=list)


class RerunRequest(_Strict):
    """Re-extraction of a scope with an extractor version; a dry run unless told otherwise."""

    scope: RerunScope = Field(default_factory=RerunScope)
    extractor_version: str = _query_text(64)
    dry_run: bool = Field(True, strict=True)


class EntityResolveRequest(_Strict):
    """A name to look up among the entities the caller may see; `type` narrows it (e.g. Person)."""

    name: str = Field(min_length=1, max_length=256, pattern=TEXT)
    type: str | None = Field(None, min_length=1, max_length=64, pattern=TEXT)


_ENTITY_ID = Field(min_length=1, max_length=MAX_KEY_CHARS, pattern=KEY)


class EntityMergeRequest(_Strict):
    """A hand merge: logged with its reason, reversible with a split."""

    entity_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS, pattern=KEY)]] = Field(
        min_length=2, max_length=100, description="Distinct entity ids.", json_schema_extra={"uniqueItems": True}
    )
    canonical_id: str | None = Field(
        None, min_length=1, max_length=MAX_KEY_CHARS, pattern=KEY, description="Default: the smallest id."
    )
    reason: str = Field(min_length=1, max_length=1000, pattern=TEXT)

    @field_validator("entity_ids")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("the entity ids must be distinct")
        return value


class CommunityRebuildRequest(_Strict):
    dry_run: bool = Field(False, description="Only count what the rebuild would recluster.")
    stale_only: bool = Field(False, description="Only the stale communities, not everything.")


class EntitySplitRequest(_Strict):
    merge_id: str = _ENTITY_ID


class EntitySplitMentionsRequest(_Strict):
    """Namesakes: the entity's mentions in these documents stand for another entity (a sense of its own)."""

    entity_id: str = _ENTITY_ID
    doc_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_DOC_ID, pattern=DOC_ID)]] = Field(
        min_length=1, max_length=100, description="Documents naming it.", json_schema_extra={"uniqueItems": True}
    )
    reason: str = Field(min_length=1, max_length=1000, pattern=TEXT)

    @field_validator("doc_ids")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("the document ids must be distinct")
        return value


class EntityReviewRequest(_Strict):
    """A person's decision on a queued "possibly the same" pair; `same` merges them (reversibly)."""

    a: str = _ENTITY_ID
    b: str = _ENTITY_ID
    same: bool = Field(strict=True)


def _whole(value: Any) -> Any:
    """20.0 is 20, as JSON Schema's `integer` says; the core's rating check then sees a whole number."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class FeedbackRequest(_Strict):
    """A caller's verdict on one of its traces; it joins the curation queue (admins work through it)."""

    @model_validator(mode="before")
    @classmethod
    def _core_rules(cls, value: Any) -> Any:
        # The core's checks first, so a bad rating, issue or comment keeps its INVALID_FEEDBACK code (the
        # same as on the CLI); a missing or unknown field is still MALFORMED_EVENT.
        if isinstance(value, Mapping):
            if "rating" in value:
                parse_rating(_whole(value["rating"]))
            parse_issue(value.get("issue"))
            parse_comment(value.get("comment"))
        return value

    trace_id: str = Field(min_length=1, max_length=MAX_KEY_CHARS, pattern=KEY, description="From a search or ask.")
    rating: Count = Field(ge=MIN_RATING, le=MAX_RATING, description="1 (worst) to 5 (best).")
    issue: FeedbackIssue | None = Field(None, description="What was wrong, if one thing was.")
    comment: str = Field("", max_length=MAX_COMMENT_CHARS, pattern=OPTIONAL_TEXT)


class FeedbackResolveRequest(_Strict):
    """How a curator dealt with a piece of feedback."""

    resolution: str = Field("", max_length=MAX_COMMENT_CHARS, pattern=OPTIONAL_TEXT)
