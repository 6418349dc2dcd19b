"""Deterministic keys for extracted facts: the same statement gets the same ID on every run and runtime.

This is not entity resolution (that comes later and may merge keys): it only makes sure that "Priya Raman"
and " priya raman." in two chunks land on one entity row, and that a fact extracted twice is stored once
with two evidence rows. A strong identifier (an email, a domain, an account ID) outranks the name, because
two people may share a name but not an email.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata
from collections.abc import Sequence
from datetime import date

from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.ids import sha256_hex

_SEP = "\x1f"  # unit separator, as in kgrag_core.ids: no name or value contains it by accident
_HASH_LENGTH = 20  # 80 bits: no collision in any graph this system will hold, and short enough to read


def _is_edge_junk(char: str) -> bool:
    # Punctuation (quotes, brackets, full stops, commas) and whitespace around a name are layout, not name.
    return char.isspace() or unicodedata.category(char).startswith("P")


def normalise_name(name: str) -> str:
    """Casefolded, NFKC-normalised, whitespace collapsed, punctuation stripped at both ends."""
    folded = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    start, end = 0, len(folded)
    while start < end and _is_edge_junk(folded[start]):
        start += 1
    while end > start and _is_edge_junk(folded[end - 1]):
        end -= 1
    return folded[start:end]


def normalise_value(value: str) -> str:
    """A claim value as compared: casefolded, whitespace collapsed. Punctuation stays ("99.9%" is not "99.9")."""
    return " ".join(unicodedata.normalize("NFKC", value).casefold().split())


def _key(prefix: str, *parts: str) -> str:
    return prefix + sha256_hex(_SEP.join(parts).encode("utf-8"))[:_HASH_LENGTH]


def _day(value: date | None) -> str:
    return value.isoformat() if value is not None else ""


def entity_id(entity_type: str, name: str, strong_ids: Sequence[tuple[str, str]] = (), *, key: bytes) -> str:
    """`ent_…`: from the first strong identifier (sorted) if there is one, else from type and normalised name,
    keyed by the installation's secret `key` (HMAC-SHA256).

    Unkeyed, anyone could compute the id of "Person / Dana Lee" or of an e-mail address and ask the entity
    API whether it exists; keyed, ids are deterministic within one installation (same input, same id) and
    meaningless outside it. The store holds the key (`kg_installation`, or KGRAG_ENTITY_ID_KEY).
    """
    if not key:
        raise ValueError("entity ids need the installation's key (an empty key would make them computable)")
    if strong_ids:
        kind, value = min((k.strip().casefold(), v.strip().casefold()) for k, v in strong_ids)
        basis = _SEP.join((entity_type, f"{kind}:{value}"))
    else:
        basis = _SEP.join((entity_type, normalise_name(name)))
    return "ent_" + hmac.new(key, basis.encode("utf-8"), hashlib.sha256).hexdigest()[:_HASH_LENGTH]


def sense_entity_id(group_id: str, split_id: str, *, key: bytes) -> str:
    """`ent_…` of one sense of a name: the entity that the mentions of `group_id` (the id `entity_id` gives the
    name) in the documents a split names stand for instead (namesakes: "Acme" the customer, "Acme" the vendor).

    Keyed like `entity_id` and deterministic: the same split gives the same id, so extraction can key those
    documents' mentions into it again after a re-ingest, an ACL change or a re-extraction.
    """
    if not key:
        raise ValueError("entity ids need the installation's key (an empty key would make them computable)")
    basis = _SEP.join(("sense", group_id, split_id))
    return "ent_" + hmac.new(key, basis.encode("utf-8"), hashlib.sha256).hexdigest()[:_HASH_LENGTH]


def split_id(from_id: str, doc_ids: Sequence[str]) -> str:
    """`spl_…`: one split of an entity's mentions in these documents (the same split, the same id)."""
    return _key("spl_", from_id, *sorted(set(doc_ids)))


def relation_id(
    subject_id: str,
    relation: str,
    object_id: str,
    valid_from: date | None,
    polarity: Polarity,
    modality: Modality,
) -> str:
    """`rel_…`: a negated or planned relation is a different fact from the plain one, so both are in the key."""
    return _key("rel_", subject_id, relation, object_id, _day(valid_from), polarity.value, modality.value)


def claim_id(
    entity_id: str,
    attribute: str,
    value: str,
    valid_from: date | None,
    polarity: Polarity,
    modality: Modality,
) -> str:
    """`clm_…`: values compare as `normalise_value` does, so "24,500 " and "24,500" are one claim."""
    return _key("clm_", entity_id, attribute, normalise_value(value), _day(valid_from), polarity.value, modality.value)


# --- blind indexes: how SQL finds a name it never sees ----------------------------------------------------

_BLIND_LENGTH = 32  # 128 bits: an index key, not an id anyone reads


def blind(key: bytes, domain: str, value: str) -> str:
    """A keyed blind index of `value`: HMAC-SHA256 under the installation's `key`, domain-separated.

    Names, name tokens and strong identifiers are stored sealed under their document's key (ADR 0008); SQL
    looks them up by this instead. Equal inputs give equal indexes within one installation, and without the
    key nothing can be computed or inverted. Migration 0010 computes the same function in SQL.
    """
    if not key:
        raise ValueError("blind indexes need the installation's key")
    message = f"kgrag-blind{_SEP}{domain}{_SEP}{value}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:_BLIND_LENGTH]


def name_key(key: bytes, name: str) -> str:
    """The blind index of a name as `normalise_name` compares it."""
    return blind(key, "name", normalise_name(name))


def name_token_keys(key: bytes, name: str) -> list[str]:
    """The blind indexes of the name's tokens of two characters or more (what resolution's scope matches)."""
    return sorted({blind(key, "token", t) for t in normalise_name(name).split(" ") if len(t) >= 2})


def strong_id_keys(key: bytes, strong_ids: Sequence[tuple[str, str]]) -> list[list[str]]:
    """[kind, blind value] pairs, sorted and distinct: compared as `entity_id` compares them (stripped,
    casefolded), so equal identifiers stay equal and the value itself is not stored."""
    pairs = {(k.strip().casefold(), v.strip().casefold()) for k, v in strong_ids}
    return [[k, blind(key, "id:" + k, v)] for k, v in sorted(pairs)]
