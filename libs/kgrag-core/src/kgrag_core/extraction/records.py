"""Records the extraction store returns: claims with their two clocks, runs with preview and receipt."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum

from kgrag_core.extraction.model import Modality, Polarity, Tier


class ClaimStatus(StrEnum):
    CURRENT = "current"
    SUPERSEDED = "superseded"  # a later-written claim gives another value for a single-valued attribute
    CONFLICT = "conflict"  # a claim written the same day gives another value
    NOT_A_FACT = "not_a_fact"  # plan, opinion, hypothetical, suggestion or negated: listed, never current


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    """One stored claim with one evidence chunk; `status` is computed over what the caller may see."""

    claim_id: str
    entity_id: str
    entity_name: str
    entity_type: str
    attribute: str
    value: str
    quote: str
    modality: Modality
    polarity: Polarity
    valid_from: date | None  # when it became true, if the text says
    valid_to: date | None
    written_at: date | None  # when the source was written (the document's date)
    chunk_id: str
    doc_id: str
    acl_class_id: str
    tier: Tier
    confidence: float
    status: ClaimStatus = ClaimStatus.CURRENT
    superseded_by: str | None = None
    conflicts_with: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChunkExtractionState:
    """What the store knows about one chunk's extraction (one row per chunk)."""

    chunk_id: str
    content_hash: str
    tier: Tier
    extractor_version: str
    ontology_version: str
    skip_reason: str | None
    representative_chunk_id: str | None
    pending_llm: bool
    items: int


@dataclass(frozen=True, slots=True)
class MinHashEntry:
    chunk_id: str
    content_hash: str
    signature: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RerunScope:
    """Which chunks a re-extraction covers. Empty fields do not narrow; all empty means every chunk."""

    doc_ids: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    # keep only chunks whose text contains one of these terms (case-insensitive): the cheap prefilter for a
    # targeted re-extraction after an ontology change adds one relation type.
    contains_any: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunEstimate:
    """A dry run's preview, or a real run's receipt: the same fields, so a test can compare them."""

    chunks_in_scope: int
    cache_hits: int
    chunks_to_extract: int
    llm_chunks: int
    calls: int
    input_tokens: int
    output_tokens: int
    tokens_counted: bool  # False: estimated (no tokenizer configured); the output says so
    estimated_cost: float
    currency: str
    estimated_seconds: float


@dataclass(slots=True)
class ExtractionRun:
    run_id: str
    scope: RerunScope
    extractor_version: str
    ontology_version: str
    dry_run: bool
    status: str  # planned | running | interrupted (resume it) | completed
    preview: RunEstimate
    receipt: RunEstimate | None = None
    done_chunk_ids: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    finished_at: datetime | None = None
