"""Claim timelines: which value of an attribute the documents give now, and which they gave before.

Two clocks: `valid_from` says when a value became true, `written_at` when a source said so. Supersession
follows the second: what a reader learns from the documents changes when a newer document says something
else, whatever date that document names. The one exception is a value the text itself closes: a claim
valid until a day is history to a value valid from that day on, whichever was written first ("99.5% until
31 December, 99.9% from January" in one email is a sequence, not a conflict, and a later recap of the old
value does not undo the new one). Nothing is deleted here: a superseded claim stays listed with a link to
the claim that replaced it, so "what did the documents say in February?" can still be answered.

Status is computed over the claims passed in, so a caller who may see fewer documents gets the timeline
of what it may see (a claim it cannot read never supersedes one it can).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from kgrag_core.extraction.identity import normalise_value
from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.extraction.ontology import Cardinality, Ontology
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus

# Only these can be "the value": a plan, an opinion, a hypothesis or an assistant's suggestion is listed
# but never becomes current, and neither does a negation ("capacity is not 30,000" gives no value).
COMPETING_MODALITIES = frozenset({Modality.FACT, Modality.REPORTED})

# An undated source is placed before every dated one: any dated claim is newer than it.
_UNDATED = date.min


def _written(claim: ClaimRecord) -> date:
    return claim.written_at if claim.written_at is not None else _UNDATED


def _order(claim: ClaimRecord) -> tuple[date, str, str, str, str, str]:
    return (_written(claim), claim.entity_id, claim.attribute, claim.claim_id, claim.chunk_id, claim.quote)


def competes(claim: ClaimRecord) -> bool:
    return claim.polarity is Polarity.POSITIVE and claim.modality in COMPETING_MODALITIES


def _ends_before(first: ClaimRecord, then: ClaimRecord) -> bool:
    """Whether the text closes `first`'s validity no later than `then`'s begins."""
    return first.valid_to is not None and then.valid_from is not None and first.valid_to <= then.valid_from


def _single_valued(group: Sequence[ClaimRecord]) -> list[ClaimRecord]:
    """Statuses for the competing claims of one single-valued attribute, `group` in written order."""
    out: list[ClaimRecord] = []
    for claim in group:
        value = normalise_value(claim.value)
        day = _written(claim)
        others = [c for c in group if normalise_value(c.value) != value and not _ends_before(c, claim)]
        later_other = [c for c in others if _written(c) > day or _ends_before(claim, c)]
        same_day_other = sorted({c.claim_id for c in others if _written(c) == day and not _ends_before(claim, c)})
        restated_later = any(_written(c) > day and normalise_value(c.value) == value for c in group)
        if later_other:
            # The first later value replaced this one; whatever came after replaced that in turn.
            status, by = ClaimStatus.SUPERSEDED, later_other[0].claim_id
        elif same_day_other and not restated_later:
            status, by = ClaimStatus.CONFLICT, None
        else:
            # Unchallenged, or a same-day disagreement that a later source settled in this value's favour.
            status, by = ClaimStatus.CURRENT, None
        out.append(dataclasses.replace(claim, status=status, superseded_by=by, conflicts_with=tuple(same_day_other)))
    return out


Cardinalities = Mapping[str, Cardinality] | Ontology


def cardinalities(source: Cardinalities) -> Mapping[str, Cardinality]:
    """Attribute -> cardinality, from an ontology or as given."""
    if isinstance(source, Ontology):
        return {name: attr.cardinality for name, attr in source.attributes.items()}
    return source


def timeline(claims: Iterable[ClaimRecord], cardinality: Cardinalities) -> list[ClaimRecord]:
    """Every claim with its status, sorted by the date it was written (then entity, attribute, claim).

    `cardinality` is the ontology or an attribute -> cardinality mapping. An attribute it does not name
    counts as single-valued: most attributes are, and treating a multi-valued one as single only adds
    visible supersessions, never hides a value.
    """
    cardinality = cardinalities(cardinality)
    groups: dict[tuple[str, str], list[ClaimRecord]] = {}
    for claim in sorted(claims, key=_order):
        groups.setdefault((claim.entity_id, claim.attribute), []).append(claim)
    out: list[ClaimRecord] = []
    for (_, attribute), group in groups.items():
        competing = [c for c in group if competes(c)]
        out.extend(
            dataclasses.replace(c, status=ClaimStatus.NOT_A_FACT, superseded_by=None, conflicts_with=())
            for c in group
            if not competes(c)
        )
        if cardinality.get(attribute, Cardinality.SINGLE) is Cardinality.MULTI:
            out.extend(
                dataclasses.replace(c, status=ClaimStatus.CURRENT, superseded_by=None, conflicts_with=())
                for c in competing
            )
        else:
            out.extend(_single_valued(competing))
    return sorted(out, key=_order)


def as_written_by(claims: Iterable[ClaimRecord], day: date, cardinality: Cardinalities) -> list[ClaimRecord]:
    """The timeline as it stood at the end of `day`: only claims written on or before it (undated included)."""
    return timeline((c for c in claims if _written(c) <= day), cardinality)


def current_values(claims: Iterable[ClaimRecord]) -> dict[tuple[str, str], list[str]]:
    """(entity_id, attribute) -> the distinct current values of a computed timeline, in written order."""
    out: dict[tuple[str, str], list[str]] = {}
    for claim in claims:
        if claim.status is ClaimStatus.CURRENT:
            values = out.setdefault((claim.entity_id, claim.attribute), [])
            if claim.value not in values:
                values.append(claim.value)
    return out
