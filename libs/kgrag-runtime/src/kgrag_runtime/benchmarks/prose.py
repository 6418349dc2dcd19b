"""A deterministic encyclopedic corpus for the ingest benchmark: short paragraphs full of named entities.

Each document is one paragraph (one chunk) in the manner of a short encyclopedia article: a person, an
organisation or a place, with dates, roles and the other entities it is linked to. Entities recur across
documents with the surface variety real text has ("Maria Okafor", "Okafor", "M. Okafor"; "Halden
Instruments" and "Halden Instruments Ltd"), popularity is heavy-tailed (a few entities appear in many
documents, most in few), and the entity pools grow with the corpus, as a growing encyclopedia's do, so that
extraction and resolution see the work a real corpus gives them. Same arguments, same corpus.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kgrag_core.acl import PUBLIC_ACL, acl_from_source
from kgrag_core.documents import SourceDocument


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_GIVEN = _words(
    "Maria Elena Tomas Ingrid Kenji Amara Lucas Sofia Pavel Nadia Omar Helena Mateo Yara Anders Leila Viktor Chiara "
    "Tariq Greta Jonas Aiko Rafael Mirela Felix Ines Dmitri Astrid Samuel Noor Henrik Lucia Emil Zora Hugo Beatrix "
    "Kofi Elif Arjun Maren Tobias Priya Stefan Olga Julian Rosa Idris Freya Bruno Selin Marco Hana Oskar Lina"
)
_FAMILY = _words(
    "Okafor Lindqvist Moreau Tanaka Kowalski Haddad Brennan Rossi Novak Fischer Alvarez Petrov Nakamura Duarte "
    "Jensen Castillo Varga Keller Osei Marchetti Holm Demir Sato Laurent Baptiste Lindgren Horvat Mensah Ferreira "
    "Berg Ibrahim Costa Schmidt Dubois Yilmaz Nilsson Rahman Bianchi Weber Kaur Andersen Silva Popescu Murphy "
    "Hoffmann Santos Eriksen Kovacs Ortega Nowak Sorensen Quinn Abbasi Lambert Vogel Romero Takahashi Olsen"
)
_ORG_STEMS = _words(
    "Halden Brightwater Kestrel Norrland Velora Ashford Corvin Meridian Tamsin Greywater Lumen Oakhurst Saltmarsh "
    "Vantor Elmstead Harrow Calder Redfern Wexford Ostrava Larkspur Stonebridge Marlow Quillon Aldergrove Fenwick "
    "Ravensburg Thornbury Ellery Castellan Brixton Wyndham Alder Hollis Kingsley Dunmore Penrose Sterling Barrow"
)
_ORG_KINDS = (
    "Instruments",
    "Foods",
    "Shipping",
    "Railway Company",
    "Institute",
    "University",
    "Press",
    "Bank",
    "Orchestra",
    "Observatory",
    "Energy",
    "Pharmaceuticals",
    "Museum",
    "Aircraft Works",
    "Textiles",
)
_ORG_SUFFIX = {"Instruments": "Ltd", "Foods": "B.V.", "Shipping": "AG", "Energy": "Inc.", "Textiles": "S.A."}
_PLACES = _words(
    "Leipzig Lyon Rotterdam Porto Gdansk Tampere Bergen Trieste Valencia Graz Ghent Malmo Aarhus Bilbao Utrecht "
    "Krakow Brno Turin Seville Bordeaux Nantes Bremen Dresden Uppsala Tartu Riga Vilnius Ljubljana Zagreb Cluj Plovdiv "
    "Thessaloniki Izmir Haifa Tunis Casablanca Dakar Accra Lagos Nairobi Mombasa Durban Pune Kochi Osaka Sendai "
    "Busan Hobart Dunedin Halifax Quebec Tucson Oaxaca Cusco Valparaiso Rosario Recife"
)
_FIELDS = (
    "astronomy",
    "marine biology",
    "railway engineering",
    "economic history",
    "organic chemistry",
    "linguistics",
    "hydrology",
    "architecture",
    "medieval literature",
    "materials science",
    "public health",
    "cartography",
)
_ROLES = ("chief engineer", "director", "chair", "principal conductor", "head of research", "managing director")
_WORKS = ("survey", "treatise", "atlas", "report", "symphony", "catalogue", "monograph", "lecture series")
_T = TypeVar("_T")
_ACLS: tuple[dict[str, list[str]] | None, ...] = (None, None, None, {"groups": ["research"]}, {"groups": ["finance"]})


@dataclass(frozen=True, slots=True)
class _Person:
    given: str
    family: str
    born: int
    field: str
    home: str

    @property
    def full(self) -> str:
        return f"{self.given} {self.family}"


@dataclass(frozen=True, slots=True)
class _Org:
    stem: str
    kind: str
    founded: int
    seat: str

    @property
    def full(self) -> str:
        return f"{self.stem} {self.kind}"

    @property
    def legal(self) -> str:
        suffix = _ORG_SUFFIX.get(self.kind)
        return f"{self.full} {suffix}" if suffix else f"the {self.full}"


class _World:
    """Entity pools sized to the corpus (about one person per 3 documents, one organisation per 8)."""

    def __init__(self, documents: int, rng: random.Random) -> None:
        people = max(40, documents // 3)
        orgs = max(15, documents // 8)
        names = sorted({(g, f) for g in _GIVEN for f in _FAMILY})
        rng.shuffle(names)
        self.people = [
            _Person(g, f, rng.randint(1840, 1980), rng.choice(_FIELDS), rng.choice(_PLACES))
            for g, f in names[: min(people, len(names))]
        ]
        stems = sorted({(s, k) for s in _ORG_STEMS for k in _ORG_KINDS})
        rng.shuffle(stems)
        self.orgs = [
            _Org(s, k, rng.randint(1780, 1990), rng.choice(_PLACES)) for s, k in stems[: min(orgs, len(stems))]
        ]

    @staticmethod
    def pick(rng: random.Random, pool: Sequence[_T]) -> _T:
        """Heavy-tailed popularity: index ~ Zipf-like, so the first entities of a pool recur most."""
        return pool[min(len(pool) - 1, int(len(pool) * rng.random() ** 2.2))]


def _person_variant(p: _Person, rng: random.Random) -> str:
    return rng.choice((p.full, p.full, p.full, f"{p.given[0]}. {p.family}", p.family))


def _org_variant(o: _Org, rng: random.Random) -> str:
    return rng.choice((o.full, o.full, o.legal, o.stem))


def _biography(w: _World, rng: random.Random) -> tuple[str, str]:
    p = w.pick(rng, w.people)
    org, other = w.pick(rng, w.orgs), w.pick(rng, w.people)
    colleague = other if other != p else w.people[(w.people.index(p) + 1) % len(w.people)]
    year = p.born + rng.randint(24, 40)
    sentences = [
        f"{p.full} (born {p.born} in {p.home}) is remembered for work in {p.field}.",
        f"After studying in {rng.choice(_PLACES)}, {p.family} joined {_org_variant(org, rng)} in {year}"
        f" and became its {rng.choice(_ROLES)} in {year + rng.randint(3, 12)}.",
        f"With {_person_variant(colleague, rng)}, {p.family} published a {rng.choice(_WORKS)} on"
        f" {rng.choice(_FIELDS)} that was reprinted in {rng.choice(_PLACES)}.",
        f"{_person_variant(p, rng)} later moved to {rng.choice(_PLACES)}, where {p.family} taught until"
        f" {year + rng.randint(15, 30)}.",
    ]
    return f"{p.full}", " ".join(sentences[: rng.randint(3, 4)])


def _organisation(w: _World, rng: random.Random) -> tuple[str, str]:
    o = w.pick(rng, w.orgs)
    founder, head = w.pick(rng, w.people), w.pick(rng, w.people)
    partner = w.pick(rng, w.orgs)
    sentences = [
        f"{o.full} was founded in {o.founded} in {o.seat} by {founder.full}.",
        f"In {o.founded + rng.randint(10, 60)} {o.stem} opened a second site in {rng.choice(_PLACES)}"
        f" and began a long partnership with {_org_variant(partner, rng)}.",
        f"Its {rng.choice(_ROLES)} since {rng.randint(1990, 2020)} has been {_person_variant(head, rng)},"
        f" who previously worked in {rng.choice(_FIELDS)}.",
        f"The {rng.choice(_WORKS)} commissioned by {o.legal} remains its best-known contribution to"
        f" {rng.choice(_FIELDS)}.",
    ]
    return o.full, " ".join(sentences[: rng.randint(3, 4)])


def _place(w: _World, rng: random.Random) -> tuple[str, str]:
    place = rng.choice(_PLACES)
    p, q = w.pick(rng, w.people), w.pick(rng, w.people)
    o = w.pick(rng, w.orgs)
    sentences = [
        f"{place} grew around its harbour and, by {rng.randint(1850, 1950)}, was a centre of {rng.choice(_FIELDS)}.",
        f"{o.full} has had its seat in {place} since {o.founded}, and {_person_variant(p, rng)} directed its"
        f" {rng.choice(_WORKS)} there.",
        f"The city council named a square after {q.full} in {rng.randint(1960, 2020)}.",
        f"Visitors from {rng.choice(_PLACES)} and {rng.choice(_PLACES)} come for the festival each autumn.",
    ]
    return place, " ".join(sentences[: rng.randint(3, 4)])


def prose_documents(count: int, *, seed: int = 2026) -> Iterator[SourceDocument]:
    """`count` one-paragraph documents, one chunk each, with ACLs cycling public ×3, `research`, `finance`."""
    rng = random.Random(seed)
    world = _World(count, rng)
    kinds = (_biography, _biography, _organisation, _place)
    for i in range(count):
        subject, text = kinds[i % len(kinds)](world, rng)
        acl_raw = _ACLS[i % len(_ACLS)]
        yield SourceDocument(
            doc_id=f"prose-{i:06d}",
            source="bench",
            uri=f"bench://prose/{i}",
            title=subject,
            body=text.encode("utf-8"),
            acl=acl_from_source(acl_raw) if acl_raw else PUBLIC_ACL,
        )
