"""Tier 2: typed mentions from NER and the entity ruler, plus light relation proposals within one sentence.

Pure: the recognizer (an adapter) found the mentions; this turns them into items. A relation is proposed
only between two neighbouring mentions of one sentence whose (subject, relation, object) the ontology
allows and whose wording carries a cue from `relation_cues`, at low confidence: tier 2 suggests, tier 3
and entity resolution decide. Every quote is a verbatim slice of the chunk. Table rows, questions and
conversation mechanics ("Kenji asked", "the assistant suggested") propose no relations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import pairwise
from typing import TypeVar

from kgrag_core.extraction.model import ClaimItem, EntityMention, Modality, RelationItem
from kgrag_core.extraction.ontology import Ontology
from kgrag_core.extraction.qualifiers import detect_qualifiers
from kgrag_core.extraction.relation_cues import (
    AFTER_WINDOW,
    APPOSITION_GAP,
    ASSISTANT_NAMES,
    CLAUSE_BREAK,
    CONVERSATION_MECHANICS,
    MAX_GAP,
    MAX_WORDS_AFTER_CUE,
    POSSESSIVE_AFTER,
    QUESTION,
    RELATION_CUES,
    CuePlace,
    Direction,
    RelationCue,
)
from kgrag_core.extraction.values import to_date
from kgrag_core.ports import RecognizedMention

DATE_LABEL = "DATE"
SOURCE_CONFIDENCE = {"ruler": 0.8, "ner": 0.6}
# 0.3 with two statistical endpoints, +0.1 for each endpoint the graph already knows by name.
RELATION_BASE_CONFIDENCE = 0.3
RELATION_KNOWN_ENDPOINT_BONUS = 0.1
CLAIM_CONFIDENCE = 0.5

Proposal = tuple[list[EntityMention], list[RelationItem], list[ClaimItem]]

# Field separators in Markdown metadata lines: "**Owner:** José Núñez · **Sponsor:** Priya Raman".
_FIELD_SEPARATOR = re.compile(r"\s+[·•]\s+")
_LEADING_MARKUP = re.compile(r"^(?:[-*+]\s+|#{1,6}\s+|>\s*|\d{1,3}[.)]\s+)+")
_NUMBER = r"\d{1,3}(?:,\d{3})+|\d+"
# "<Site> now has 24,500 pallet positions", "<Site> goes from 18,000 to 24,500 pallet positions".
_CAPACITY_AFTER_SITE = re.compile(
    rf"^\s+(?:now\s+|still\s+)?(?:has|have|holds|offers)\s+(?:about\s+|around\s+|roughly\s+)?(?P<value>{_NUMBER})"
    rf"\s+pallet positions\b"
    rf"|^\s+(?:\w+\s+){{0,2}}?from\s+(?:{_NUMBER})\s+to\s+(?P<to_value>{_NUMBER})\s+pallet positions\b"
)
# The Site is an adverbial, not the owner of the number: "the cage at LEJ-2 holds 400 pallet positions".
_PREPOSITION_BEFORE = re.compile(r"\b(?:at|in|from|of|to|near|for|by|with|inside|within)\s+$", re.IGNORECASE)
_CAPACITY_ATTRIBUTE = "capacity_pallets"

_Item = TypeVar("_Item", RelationItem, ClaimItem)

# How far before a DATE mention its day and its "until"/"since" are looked for.
_DATE_CONTEXT = 24
_DAY_BEFORE = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+$")
_END_MARKER = re.compile(
    r"\b(?:until|till|through|left|leaves|leaving|ended|ends|ending|expired|expires|stopped|retired)\b(?:\s+\w+)?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Validity:
    valid_from: date | None = None
    valid_to: date | None = None


@dataclass(frozen=True, slots=True)
class _Segment:
    """A sentence clipped to its line and its field: the unit within which relations are proposed."""

    start: int
    end: int
    prose: bool  # False for table rows: cells are not sentences


def propose(chunk_text: str, mentions: Sequence[RecognizedMention], ontology: Ontology) -> Proposal:
    """Typed entity mentions, within-sentence relation proposals and (narrow) claims for one chunk."""
    placed = [(m, seg) for m in mentions if (seg := _segment_of(chunk_text, m)) is not None]
    entities = _entities(chunk_text, placed, ontology)
    relations: list[RelationItem] = []
    claims: list[ClaimItem] = []
    for seg, members in _by_segment(placed):
        if not seg.prose:
            continue
        quote = chunk_text[seg.start : seg.end]
        validity = _segment_validity(chunk_text, seg, members)
        typed = [m for m in members if m.label != DATE_LABEL and m.label in ontology.entity_types]
        if not QUESTION.search(quote):
            relations += _relations(chunk_text, quote, seg, typed, ontology, validity)
        claims += _capacity_claims(chunk_text, quote, seg, typed, ontology, validity)
    return entities, _unique(relations), _unique(claims)


# --- segments ----------------------------------------------------------------------------------------


def _segment_of(text: str, mention: RecognizedMention) -> _Segment | None:
    """The mention's sentence, clipped to its line and field; None when the mention does not fit in one."""
    line_start = text.rfind("\n", 0, mention.start) + 1
    line_end = text.find("\n", mention.end)
    line_end = len(text) if line_end < 0 else line_end
    start, end = max(mention.sentence_start, line_start), min(mention.sentence_end, line_end)
    if not start <= mention.start < mention.end <= end or "\n" in text[mention.start : mention.end]:
        return None
    prose = not text[line_start:line_end].lstrip().startswith("|")
    for sep in _FIELD_SEPARATOR.finditer(text, start, end):
        if sep.end() <= mention.start:
            start = sep.end()
        elif sep.start() >= mention.end:
            end = sep.start()
            break
    lead = _LEADING_MARKUP.match(text, start, end)
    if lead is not None and lead.end() <= mention.start:
        start = lead.end()
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return _Segment(start, end, prose)


def _by_segment(
    placed: Sequence[tuple[RecognizedMention, _Segment]],
) -> Iterator[tuple[_Segment, list[RecognizedMention]]]:
    groups: dict[_Segment, list[RecognizedMention]] = {}
    for mention, seg in placed:
        groups.setdefault(seg, []).append(mention)
    for seg, members in groups.items():
        yield seg, sorted(members, key=lambda m: (m.start, m.end))


# --- entities ----------------------------------------------------------------------------------------


def _entities(
    text: str, placed: Sequence[tuple[RecognizedMention, _Segment]], ontology: Ontology
) -> list[EntityMention]:
    """One mention per (name, type), with the most confident source and that occurrence's sentence."""
    best: dict[tuple[str, str], EntityMention] = {}
    for mention, seg in placed:
        if mention.label not in ontology.entity_types:
            continue
        confidence = SOURCE_CONFIDENCE.get(mention.source, SOURCE_CONFIDENCE["ner"])
        key = (mention.text, mention.label)
        if key not in best or best[key].confidence < confidence:
            best[key] = EntityMention(mention.text, mention.label, text[seg.start : seg.end], confidence)
    return list(best.values())


# --- relations ---------------------------------------------------------------------------------------


def _relations(
    text: str,
    quote: str,
    seg: _Segment,
    typed: Sequence[RecognizedMention],
    ontology: Ontology,
    validity: _Validity,
) -> list[RelationItem]:
    found: list[RelationItem] = []
    qualifiers = None
    for first, second in pairwise(typed):
        if first.end > second.start or _is_assistant(first) or _is_assistant(second):
            continue
        gap = text[first.end : second.start]
        after = text[second.end : min(seg.end, second.end + AFTER_WINDOW)]
        if len(gap) > MAX_GAP or CONVERSATION_MECHANICS.search(gap) or CLAUSE_BREAK.search(gap):
            continue
        if POSSESSIVE_AFTER.match(after):
            continue
        triple = _cued_triple(gap, after, first, second, ontology)
        if triple is None:
            continue
        subject, relation, obj = triple
        if qualifiers is None:
            qualifiers = detect_qualifiers(quote)
        known = sum(m.source == "ruler" for m in (subject, obj))
        found.append(
            RelationItem(
                subject=subject.text,
                subject_type=subject.label,
                relation=relation,
                object=obj.text,
                object_type=obj.label,
                quote=quote,
                confidence=round(RELATION_BASE_CONFIDENCE + RELATION_KNOWN_ENDPOINT_BONUS * known, 2),
                polarity=qualifiers.polarity,
                modality=qualifiers.modality or Modality.FACT,
                valid_from=validity.valid_from,
                valid_to=validity.valid_to,
            )
        )
    return found


def _cued_triple(
    gap: str, after: str, first: RecognizedMention, second: RecognizedMention, ontology: Ontology
) -> tuple[RecognizedMention, str, RecognizedMention] | None:
    """The first cue (in lexicon order) that fits both the wording and the ontology."""
    for cue in RELATION_CUES:
        if not _cue_matches(cue, gap, after):
            continue
        oriented = _orient(cue, first, second, ontology)
        if oriented is not None:
            return oriented[0], cue.relation, oriented[1]
    return None


def _cue_matches(cue: RelationCue, gap: str, after: str) -> bool:
    if cue.place is CuePlace.AFTER:
        return APPOSITION_GAP.match(gap) is not None and cue.pattern.search(after) is not None
    if cue.unless is not None and cue.unless.search(gap):
        return False
    # The cue must lead up to the later mention: in "Beacon runs on PostgreSQL 16, with a replica in the US
    # serving Halden Outdoor" what runs on something is not Halden Outdoor.
    return any(len(gap[hit.end() :].split()) <= MAX_WORDS_AFTER_CUE for hit in cue.pattern.finditer(gap))


def _orient(
    cue: RelationCue, first: RecognizedMention, second: RecognizedMention, ontology: Ontology
) -> tuple[RecognizedMention, RecognizedMention] | None:
    forward = ontology.allows_triple(first.label, cue.relation, second.label)
    backward = ontology.allows_triple(second.label, cue.relation, first.label)
    if cue.direction is Direction.FORWARD:
        return (first, second) if forward else None
    if cue.direction is Direction.BACKWARD:
        return (second, first) if backward else None
    if forward:
        return first, second
    return (second, first) if backward else None


def _is_assistant(mention: RecognizedMention) -> bool:
    return ASSISTANT_NAMES.match(mention.text.strip()) is not None


# --- claims ------------------------------------------------------------------------------------------


def _capacity_claims(
    text: str,
    quote: str,
    seg: _Segment,
    typed: Sequence[RecognizedMention],
    ontology: Ontology,
    validity: _Validity,
) -> list[ClaimItem]:
    """Pallet capacity, only where the Site is the sentence's subject and the number follows it directly."""
    claims: list[ClaimItem] = []
    for mention in typed:
        if not ontology.allows_attribute(mention.label, _CAPACITY_ATTRIBUTE):
            continue
        hit = _CAPACITY_AFTER_SITE.match(text[mention.end : seg.end])
        if hit is None or _PREPOSITION_BEFORE.search(text[seg.start : mention.start]):
            continue
        qualifiers = detect_qualifiers(quote)
        value = hit.group("value") or hit.group("to_value")
        claims.append(
            ClaimItem(
                entity=mention.text,
                entity_type=mention.label,
                attribute=_CAPACITY_ATTRIBUTE,
                value=value,
                quote=quote,
                confidence=CLAIM_CONFIDENCE,
                polarity=qualifiers.polarity,
                modality=qualifiers.modality or Modality.FACT,
                valid_from=validity.valid_from,
                valid_to=validity.valid_to,
            )
        )
    return claims


# --- dates -------------------------------------------------------------------------------------------


def _segment_validity(text: str, seg: _Segment, members: Sequence[RecognizedMention]) -> _Validity:
    """The sentence's dates: "until/left in <date>" ends the statement's validity, any other full date starts it.
    A side with two different dates is left empty rather than guessed."""
    starts: set[date] = set()
    ends: set[date] = set()
    for mention in members:
        if mention.label != DATE_LABEL:
            continue
        before = text[max(seg.start, mention.start - _DATE_CONTEXT) : mention.start]
        # The model sometimes leaves the day out of the span: "2 [September 2024]".
        day = _DAY_BEFORE.search(before)
        parsed = parse_full_date((day.group(1) + " " if day else "") + mention.text)
        if parsed is None:
            continue
        (ends if _END_MARKER.search(before[: day.start()] if day else before) else starts).add(parsed)
    return _Validity(
        valid_from=next(iter(starts)) if len(starts) == 1 else None,
        valid_to=next(iter(ends)) if len(ends) == 1 else None,
    )


def parse_full_date(text: str) -> date | None:
    """A date with at least a month and a year ("June 2024" -> 2024-06-01); None for "May", "2023", "Q4".
    The same reading as attribute values (`values.to_date`): a part the text does not give is never invented."""
    return to_date(text, need_month=True)


def _unique(items: list[_Item]) -> list[_Item]:
    return list(dict.fromkeys(items))
