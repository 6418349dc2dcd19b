"""Tier 3: schema-guided LLM extraction, several chunks per call, every item bound to a verbatim quote.

The messages are a pure function of (batch, ontology), so a dry run counts exactly the tokens a real run
sends and a recorded reply is found again by the request's hash. A reply that is not JSON of the expected
shape is asked for once more with the parse error appended, then quarantined with the reason, never
written. Rate limits wait for the endpoint's Retry-After (a bounded number of times); an endpoint that is
down or slow leaves the batch pending for a later run instead of failing the pipeline.

What `LlmExtractor.extract` returns is not yet validated: every tier's items go through
`extraction.validation.validate` against their chunk before anything is stored.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol, TypeVar, runtime_checkable

from kgrag_core.documents import Chunk
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.llm_schema import extraction_json_schema
from kgrag_core.extraction.model import (
    ClaimItem,
    DroppedItem,
    DropReason,
    EntityMention,
    Modality,
    Polarity,
    Quarantined,
    RelationItem,
)
from kgrag_core.extraction.ontology import Ontology
from kgrag_core.extraction.values import to_date
from kgrag_core.ports import ChatMessage, ChatModel

# Bump whenever the instructions, the example or the chunk rendering change: cached results keyed by the
# old version are then re-extracted.
PROMPT_VERSION = "t3-prompt-1"
# Entities carry no confidence in the reply format; a quoted, validated LLM mention is fairly sure.
ENTITY_CONFIDENCE = 0.8
DEFAULT_RATE_LIMIT_WAIT_S = 5.0

ChunkItems = tuple[list[EntityMention], list[RelationItem], list[ClaimItem]]


class RateLimitedError(KgragError):
    """The endpoint refused for rate: `retry_after_s` is its Retry-After in seconds (None if it gave none)."""

    def __init__(self, message: str, *, retry_after_s: float | None, hint: str | None = None) -> None:
        super().__init__(
            ErrorCode.LLM_RATE_LIMITED,
            message,
            hint=hint or "the LLM endpoint is rate limiting; wait, lower the batch size or raise the quota",
        )
        self.retry_after_s = retry_after_s


@runtime_checkable
class ReportsUsage(Protocol):
    """A chat model that knows the token usage of its last reply (from the endpoint's `usage` field)."""

    @property
    def last_usage(self) -> tuple[int, int] | None: ...


def tier3_extractor_version(model_id: str) -> str:
    """The cache's extractor version for tier 3: another model or prompt means another extraction."""
    return f"llm:{model_id}:{PROMPT_VERSION}"


def estimate_tokens(text: str) -> int:
    """About four characters per token: the estimate used when no tokenizer is configured."""
    return math.ceil(len(text) / 4)


def request_tokens(
    messages: Sequence[ChatMessage], json_schema: Mapping[str, object] | None, count_tokens: Callable[[str], int]
) -> int:
    """Input tokens of one request, counted the same way by the dry run and the real run."""
    total = sum(count_tokens(m.content) for m in messages)
    if json_schema is not None:
        total += count_tokens(json.dumps(json_schema, sort_keys=True, separators=(",", ":")))
    return total


# --- batching and messages ---------------------------------------------------------------------------


def render_chunk(chunk: Chunk) -> str:
    section = chunk.section_path.replace('"', "'")
    header = f'<chunk id="{chunk.chunk_id}"' + (f' section="{section}"' if section else "") + ">"
    return f"{header}\n{chunk.text}\n</chunk>"


_RENDERED_CHUNK = re.compile(r'<chunk id="(?P<id>[^"]+)"(?: section="[^"]*")?>\n(?P<text>.*?)\n</chunk>', re.DOTALL)


def rendered_chunks(user_message: str) -> list[tuple[str, str]]:
    """(chunk_id, text) of each chunk `render_chunk` wrote into a request, in order: how a stand-in model
    reads a tier-3 request as a real one would."""
    return [(m["id"], m["text"]) for m in _RENDERED_CHUNK.finditer(user_message)]


def build_batches(
    chunks: Sequence[Chunk], *, max_chunks: int, max_input_tokens: int, count_tokens: Callable[[str], int]
) -> list[list[Chunk]]:
    """Consecutive chunks, in order, packed while the rendered chunks fit `max_input_tokens` (the fixed
    instructions not included); a chunk larger than the budget travels alone.

    A batch never mixes ACL classes: the model reads a batch as one text, so what a restricted chunk says
    ("Brackenfold, our overflow site") would shape how it types a name in a public chunk next to it
    (docs/security.md, section 4). Chunks are packed per class, classes in order of first appearance."""
    if max_chunks < 1 or max_input_tokens < 1:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            f"tier 3 batching needs max_chunks >= 1 and max_input_tokens >= 1 (got {max_chunks}, {max_input_tokens})",
            hint="fix the extraction settings",
        )
    by_class: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_class.setdefault(chunk.acl_class_id, []).append(chunk)
    batches: list[list[Chunk]] = []
    for group in by_class.values():
        current: list[Chunk] = []
        used = 0
        for chunk in group:
            cost = count_tokens(render_chunk(chunk))
            if current and (len(current) >= max_chunks or used + cost > max_input_tokens):
                batches.append(current)
                current, used = [], 0
            current.append(chunk)
            used += cost
        if current:
            batches.append(current)
    return batches


_INSTRUCTIONS = """\
You extract a knowledge graph from document chunks. Reply with one JSON object only, in the given schema:
{"entities": [...], "relations": [...], "claims": [...]}.

Rules:
1. Every item names the chunk_id of the chunk it comes from and carries a quote: text copied verbatim from
   that chunk (a sentence or part of one) that states the item. Never paraphrase, translate or join pieces;
   an item whose quote is not found in its chunk is discarded.
2. Use only the entity types, relations (with their allowed subject and object types) and attributes listed
   below. Name entities as the chunk writes them.
3. Conversation mechanics are not relations: "X asked Y", "X replied", "the assistant suggested" do not
   relate X and Y. Chat participants (user, assistant) are not entities.
4. modality: "fact" for what the text states as true; "plan" for plans, drafts, proposals and targets;
   "opinion" for beliefs and judgements ("I think", "probably"); "hypothetical" for possibilities ("might",
   "could", "if"); "reported" for what someone else is said to have said; "ai_suggestion" for what an AI
   assistant suggested.
5. polarity: "negative" when the text says it is not (or no longer) so, else "positive". Do not drop
   negated statements; mark them.
6. valid_from / valid_to: ISO dates only when the text says when it became or stopped being true, else null.
7. Claim values: the value as written (for example "24,500", "99.9%", "EUR 141,000", "4 business hours").
8. confidence: 0 to 1, how clearly the text supports the item.
9. Extract nothing you are unsure of rather than guessing. Empty lists are a valid reply.
"""

_EXAMPLE_CHUNK = (
    '<chunk id="example-1">\n'
    "Priya Raman leads the Routing team. Atlas no longer uses Redis 6. We plan to raise LEJ-2 capacity to "
    "30,000 pallets in 2025.\n</chunk>"
)
_EXAMPLE_REPLY: dict[str, Any] = {
    "entities": [
        {
            "chunk_id": "example-1",
            "name": "Priya Raman",
            "type": "Person",
            "quote": "Priya Raman leads the Routing team",
        }
    ],
    "relations": [
        {
            "chunk_id": "example-1",
            "subject": "Priya Raman",
            "subject_type": "Person",
            "relation": "LEADS",
            "object": "Routing",
            "object_type": "Team",
            "quote": "Priya Raman leads the Routing team",
            "polarity": "positive",
            "modality": "fact",
            "valid_from": None,
            "valid_to": None,
            "confidence": 0.95,
        },
        {
            "chunk_id": "example-1",
            "subject": "Atlas",
            "subject_type": "System",
            "relation": "USES",
            "object": "Redis 6",
            "object_type": "System",
            "quote": "Atlas no longer uses Redis 6",
            "polarity": "negative",
            "modality": "fact",
            "valid_from": None,
            "valid_to": None,
            "confidence": 0.9,
        },
    ],
    "claims": [
        {
            "chunk_id": "example-1",
            "entity": "LEJ-2",
            "entity_type": "Site",
            "attribute": "capacity_pallets",
            "value": "30,000",
            "quote": "We plan to raise LEJ-2 capacity to 30,000 pallets in 2025",
            "polarity": "positive",
            "modality": "plan",
            "valid_from": "2025-01-01",
            "valid_to": None,
            "confidence": 0.8,
        }
    ],
}


def _describe_ontology(ontology: Ontology) -> str:
    lines = ["Entity types:"]
    for name in sorted(ontology.entity_types):
        description = ontology.entity_types[name].description
        lines.append(f"- {name}" + (f": {description}" if description else ""))
    lines.append("Relations (subject types -> object types):")
    for name in sorted(ontology.relation_types):
        rel = ontology.relation_types[name]
        lines.append(f"- {name}: {' | '.join(rel.subject_types)} -> {' | '.join(rel.object_types)}")
    lines.append("Attributes (entity types; value type):")
    for name in sorted(ontology.attributes):
        attr = ontology.attributes[name]
        description = f" - {attr.description}" if attr.description else ""
        lines.append(f"- {name}: {' | '.join(attr.entity_types)}; {attr.value_type.value}{description}")
    return "\n".join(lines)


def build_messages(batch: Sequence[Chunk], ontology: Ontology) -> list[ChatMessage]:
    """The request for one batch: deterministic, so its hash and its token count are stable."""
    system = "\n".join(
        [
            _INSTRUCTIONS,
            _describe_ontology(ontology),
            "",
            "Example (it shows the format; use only the types listed above):",
            _EXAMPLE_CHUNK,
            json.dumps(_EXAMPLE_REPLY, ensure_ascii=False),
        ]
    )
    user = "Extract entities, relations and claims from these chunks.\n\n" + "\n\n".join(
        render_chunk(chunk) for chunk in batch
    )
    return [ChatMessage("system", system), ChatMessage("user", user)]


# --- parsing -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedReply:
    by_chunk: dict[str, ChunkItems]  # every chunk of the batch, in batch order (empty lists if nothing)
    # Refused items by chunk. An item naming a chunk outside the batch is filed under the batch's first
    # chunk (its detail names the bogus id), so it is counted with the call that produced it.
    dropped: dict[str, tuple[DroppedItem, ...]]


class _ItemError(Exception):
    def __init__(self, reason: DropReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


_E = TypeVar("_E", Modality, Polarity)
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(?P<body>.*)\n\s*```\s*$", re.DOTALL)


def _invalid_reply(message: str) -> KgragError:
    return KgragError(
        ErrorCode.EXTRACTION_REPLY_INVALID,
        message,
        hint="the model did not follow the reply schema; check that the endpoint supports json_schema output",
    )


def _text(raw: Mapping[str, Any], name: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str) or not value.strip():
        raise _ItemError(DropReason.MISSING_FIELD, f"missing or empty {name!r}")
    return value.strip() if name != "quote" else value


def _confidence(raw: Mapping[str, Any]) -> float:
    value = raw.get("confidence")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise _ItemError(DropReason.MISSING_FIELD, "missing or non-numeric 'confidence'")
    return min(1.0, max(0.0, float(value)))


def _choice(raw: Mapping[str, Any], name: str, enum: type[_E]) -> _E:
    value = raw.get(name)
    try:
        return enum(value if isinstance(value, str) else "")
    except ValueError as err:
        raise _ItemError(DropReason.MISSING_FIELD, f"{name!r} is {value!r}, not one of the allowed values") from err


def _date(raw: Mapping[str, Any], name: str) -> date | None:
    value = raw.get(name)
    if value is None:
        return None
    parsed = to_date(value) if isinstance(value, str) else None
    if parsed is None:
        raise _ItemError(DropReason.VALUE_TYPE_INVALID, f"{name!r} is {value!r}, not a date")
    return parsed


def _entity(raw: Mapping[str, Any]) -> EntityMention:
    return EntityMention(_text(raw, "name"), _text(raw, "type"), _text(raw, "quote"), ENTITY_CONFIDENCE)


def _relation(raw: Mapping[str, Any]) -> RelationItem:
    return RelationItem(
        subject=_text(raw, "subject"),
        subject_type=_text(raw, "subject_type"),
        relation=_text(raw, "relation"),
        object=_text(raw, "object"),
        object_type=_text(raw, "object_type"),
        quote=_text(raw, "quote"),
        confidence=_confidence(raw),
        polarity=_choice(raw, "polarity", Polarity),
        modality=_choice(raw, "modality", Modality),
        valid_from=_date(raw, "valid_from"),
        valid_to=_date(raw, "valid_to"),
    )


def _claim(raw: Mapping[str, Any]) -> ClaimItem:
    value = raw.get("value")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # a number where a string was asked for is still the value
    return ClaimItem(
        entity=_text(raw, "entity"),
        entity_type=_text(raw, "entity_type"),
        attribute=_text(raw, "attribute"),
        value=_text({**raw, "value": value}, "value"),
        quote=_text(raw, "quote"),
        confidence=_confidence(raw),
        polarity=_choice(raw, "polarity", Polarity),
        modality=_choice(raw, "modality", Modality),
        valid_from=_date(raw, "valid_from"),
        valid_to=_date(raw, "valid_to"),
    )


_PARSERS: dict[str, Callable[[Mapping[str, Any]], EntityMention | RelationItem | ClaimItem]] = {
    "entities": _entity,
    "relations": _relation,
    "claims": _claim,
}
_KIND = {"entities": "entity", "relations": "relation", "claims": "claim"}


def _load(reply: str) -> dict[str, Any]:
    fenced = _FENCE.match(reply)
    try:
        data = json.loads(fenced["body"] if fenced else reply)
    except ValueError as err:
        raise _invalid_reply(f"the reply is not valid JSON: {err}") from err
    if not isinstance(data, dict):
        raise _invalid_reply(f"the reply is a JSON {type(data).__name__}, not an object")
    for section in _PARSERS:
        if not isinstance(data.get(section), list):
            raise _invalid_reply(f"the reply has no {section!r} list")
        if not all(isinstance(item, dict) for item in data[section]):
            raise _invalid_reply(f"every item of {section!r} must be an object")
    return data


def parse_reply(reply: str, batch: Sequence[Chunk]) -> ParsedReply:
    """Items of the reply by chunk. A reply that is not JSON or not the expected shape raises
    EXTRACTION_REPLY_INVALID; a bad item (unknown chunk, missing field, bad date) is dropped with its reason."""
    data = _load(reply)
    by_chunk: dict[str, ChunkItems] = {chunk.chunk_id: ([], [], []) for chunk in batch}
    dropped: dict[str, list[DroppedItem]] = {}
    first = batch[0].chunk_id if batch else ""
    for section, parse in _PARSERS.items():
        kind = _KIND[section]
        for raw in data[section]:
            chunk_id = raw.get("chunk_id")
            try:
                if not isinstance(chunk_id, str) or chunk_id not in by_chunk:
                    raise _ItemError(DropReason.UNKNOWN_CHUNK, f"chunk_id {chunk_id!r} is not in the batch")
                item = parse(raw)
            except _ItemError as err:
                owner = chunk_id if isinstance(chunk_id, str) and chunk_id in by_chunk else first
                dropped.setdefault(owner, []).append(DroppedItem(kind, err.reason, f"{owner}: {err.detail}"))
                continue
            entities, relations, claims = by_chunk[chunk_id]
            if isinstance(item, EntityMention):
                entities.append(item)
            elif isinstance(item, RelationItem):
                relations.append(item)
            else:
                claims.append(item)
    return ParsedReply(by_chunk, {chunk_id: tuple(items) for chunk_id, items in dropped.items()})


# --- the extractor ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LlmUsage:
    calls: int = 0  # requests that returned a reply (the ones an endpoint bills)
    input_tokens: int = 0
    output_tokens: int = 0
    rate_limited: int = 0  # refusals waited out
    tokens_from_endpoint: bool = False  # True: at least one reply's usage was reported, not counted by us

    def __add__(self, other: LlmUsage) -> LlmUsage:
        return LlmUsage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.rate_limited + other.rate_limited,
            self.tokens_from_endpoint or other.tokens_from_endpoint,
        )


@dataclass(frozen=True, slots=True)
class LlmBatchResult:
    """One batch's outcome: items by chunk (unvalidated), or a quarantined reply, or pending chunks."""

    items: dict[str, ChunkItems] = field(default_factory=dict)
    dropped: dict[str, tuple[DroppedItem, ...]] = field(default_factory=dict)  # see ParsedReply.dropped
    quarantined: Quarantined | None = None
    pending_chunk_ids: tuple[str, ...] = ()
    pending_reason: str | None = None
    usage: LlmUsage = field(default_factory=LlmUsage)

    @property
    def calls(self) -> int:
        return self.usage.calls

    @property
    def input_tokens(self) -> int:
        return self.usage.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.usage.output_tokens


_RETRY_REQUEST = (
    "Your reply could not be used: {error}\n"
    "Reply again with only the JSON object in the required schema, for the same chunks."
)


class _Pending(Exception):  # internal control flow, never escapes this module
    def __init__(self, reason: str, usage: LlmUsage) -> None:
        super().__init__(reason)
        self.reason = reason
        self.usage = usage


class LlmExtractor:
    """Calls the chat model for one batch at a time; see the module docstring for the failure handling."""

    def __init__(
        self,
        model: ChatModel,
        ontology: Ontology,
        *,
        max_retries_rate_limit: int = 3,
        max_wait_s: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
        count_tokens: Callable[[str], int] = estimate_tokens,
        extractor_version: str | None = None,
    ) -> None:
        self._model = model
        self.ontology = ontology
        self._max_rate_retries = max_retries_rate_limit
        self._max_wait_s = max_wait_s
        self._sleep = sleep  # injected so tests and the scheduler decide how waiting happens
        self._count = count_tokens
        self.version = extractor_version or tier3_extractor_version(model.model_id)

    @property
    def ontology(self) -> Ontology:
        return self._ontology

    @ontology.setter
    def ontology(self, ontology: Ontology) -> None:
        """A new ontology version: later batches are asked for (and parsed against) its schema."""
        self._ontology = ontology
        self._schema = extraction_json_schema(ontology)

    @property
    def json_schema(self) -> dict[str, Any]:
        return self._schema

    def messages_for(self, batch: Sequence[Chunk]) -> list[ChatMessage]:
        return build_messages(batch, self._ontology)

    def request_tokens(self, batch: Sequence[Chunk]) -> int:
        """Input tokens of the batch's first request: what a dry run previews for it."""
        return request_tokens(build_messages(batch, self._ontology), self._schema, self._count)

    def extract(self, batch: Sequence[Chunk]) -> LlmBatchResult:
        messages = build_messages(batch, self._ontology)
        chunk_ids = tuple(chunk.chunk_id for chunk in batch)
        usage = LlmUsage()
        request = messages
        errors: list[str] = []
        reply = ""
        for _attempt in range(2):
            try:
                reply, used = self._complete(request)
            except _Pending as pending:
                return LlmBatchResult(
                    pending_chunk_ids=chunk_ids, pending_reason=pending.reason, usage=usage + pending.usage
                )
            usage += used
            try:
                parsed = parse_reply(reply, batch)
            except KgragError as err:
                errors.append(err.message)
                request = [
                    *messages,
                    ChatMessage("assistant", reply),
                    ChatMessage("user", _RETRY_REQUEST.format(error=err.message)),
                ]
                continue
            return LlmBatchResult(items=parsed.by_chunk, dropped=parsed.dropped, usage=usage)
        reason = "reply invalid twice: " + " / ".join(errors)
        return LlmBatchResult(quarantined=Quarantined(chunk_ids, reason, reply, self.version), usage=usage)

    def _complete(self, messages: Sequence[ChatMessage]) -> tuple[str, LlmUsage]:
        waits = 0
        while True:
            try:
                reply = self._model.complete(messages, json_schema=self._schema)
            except KgragError as err:
                if err.code is ErrorCode.LLM_RATE_LIMITED:
                    delay = getattr(err, "retry_after_s", None)
                    delay = DEFAULT_RATE_LIMIT_WAIT_S * 2**waits if delay is None else float(delay)
                    if waits < self._max_rate_retries and delay <= self._max_wait_s:
                        self._sleep(delay)
                        waits += 1
                        continue
                    raise _Pending(
                        f"rate limited after {waits} waits: {err.message}", LlmUsage(rate_limited=waits)
                    ) from err
                if err.code is ErrorCode.LLM_UNAVAILABLE:
                    raise _Pending(f"LLM unavailable: {err.message}", LlmUsage(rate_limited=waits)) from err
                raise
            return reply, self._usage(messages, reply, waits)

    def _usage(self, messages: Sequence[ChatMessage], reply: str, waits: int) -> LlmUsage:
        reported = self._model.last_usage if isinstance(self._model, ReportsUsage) else None
        if reported is not None:
            return LlmUsage(1, reported[0], reported[1], waits, tokens_from_endpoint=True)
        return LlmUsage(1, request_tokens(messages, self._schema, self._count), self._count(reply), waits)
