"""A deterministic multi-hop corpus with questions whose gold passages are known hop by hop.

A fictional world of people, organisations, cities, provinces and written works (the name pools of
`prose.py`), each fact stated in its own short passage: passage A names a person's employer, passage B the
employer's seat, passage C the seat's province. A question that asks for the province of a person's
employer needs all three, and only the first shares a word with the question, so a retriever that does not
hop finds the first and misses the rest. Every relation has several wordings (and names come in variants:
"Maria Okafor", "M. Okafor", "Okafor"; "Halden Foods", "Halden Foods B.V."), and passages carry distractor
sentences that name other cities, people and organisations, so that matching surface words alone does not
solve a bridge.

Question kinds: `lookup` (one passage), `bridge` (two hops), `comparison` (two or four passages, one per
side), `chain3` and `chain4` (three and four hops). `entity_heavy` is false where the question names no
person or organisation, only a work's title. The split is stratified by kind with a fixed seed and was
assigned before anything was tuned (`assign_splits`). Same seed, same files, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kgrag_runtime.benchmarks.prose import (
    _FAMILY,
    _FIELDS,
    _GIVEN,
    _ORG_KINDS,
    _ORG_STEMS,
    _ORG_SUFFIX,
    _PLACES,
    _words,
)

SEED = 1313
SPLIT_SEED = 13
TEST_SHARE = 1 / 3
KINDS = ("lookup", "bridge", "comparison", "chain3", "chain4")
# How many questions of each kind (title-started ones are part of bridge, chain3 and chain4).
QUESTION_COUNTS = {"lookup": 40, "bridge": 50, "comparison": 30, "chain3": 40, "chain4": 30}
_PROVINCES = (
    "Vessmark",
    "Ostrand",
    "Calvera",
    "Lunebrook",
    "Marrowdale",
    "Westhal",
    "Corrinth",
    "Sablemoor",
    "Thessary",
    "Norhaven",
    "Quillmark",
    "Aberlyn",
    "Dravenfold",
    "Ellisgrove",
)
_ROLES = ("chief engineer", "director", "chair", "head of research", "managing director", "senior fellow")
_WORK_KINDS = ("treatise", "survey", "monograph", "atlas", "handbook", "report")
_TITLE_ADJ = _words(
    "Coastal Silent Northern Hidden Drifting Frozen Amber Winding Lost Quiet Distant Salt Hollow Iron Pale Shifting"
)
_TITLE_NOUN = _words(
    "Fog Tides Harbours Bridges Meadows Archives Lanterns Marshes Ridges Currents Orchards Glaciers Ledgers Canals"
)
PRINCIPAL = {"user": "eval-admin", "groups": ["engineering", "finance", "hr", "security", "leadership"]}


@dataclass(frozen=True, slots=True)
class Person:
    given: str
    family: str
    born: int
    birthplace: str
    field: str
    employer: int = -1  # index into the organisations
    mentor: int = -1  # index into the people; -1: none
    role: str = ""

    @property
    def name(self) -> str:
        return f"{self.given} {self.family}"


@dataclass(frozen=True, slots=True)
class Org:
    stem: str
    kind: str
    seat: str
    founded: int
    founder: int  # index into the people

    @property
    def name(self) -> str:
        return f"{self.stem} {self.kind}"

    @property
    def legal(self) -> str:
        suffix = _ORG_SUFFIX.get(self.kind)
        return f"{self.name} {suffix}" if suffix else self.name


@dataclass(frozen=True, slots=True)
class Work:
    title: str
    kind: str
    author: int
    year: int
    topic: str


@dataclass
class World:
    people: list[Person]
    orgs: list[Org]
    province: dict[str, str]  # city -> province
    works: list[Work]
    passages: list[dict[str, object]] = field(default_factory=list)
    # (fact kind, subject key) -> passage id, e.g. ("employer", 12) -> "mh-p0012-employer"
    fact_doc: dict[tuple[str, object], str] = field(default_factory=dict)
    fact_sentence: dict[str, str] = field(default_factory=dict)  # passage id -> the sentence stating the fact


def build_world(rng: random.Random, people: int = 640, orgs: int = 150, works: int = 120) -> World:
    names = sorted({(g, f) for g in _GIVEN for f in _FAMILY})
    rng.shuffle(names)
    stems = sorted({(s, k) for s in _ORG_STEMS for k in _ORG_KINDS})
    rng.shuffle(stems)
    cities = list(_PLACES)
    province = {c: _PROVINCES[i % len(_PROVINCES)] for i, c in enumerate(sorted(cities, key=lambda c: rng.random()))}
    crowd = [Person(g, f, rng.randint(1850, 1975), rng.choice(cities), rng.choice(_FIELDS)) for g, f in names[:people]]
    org_list = [Org(s, k, rng.choice(cities), rng.randint(1800, 1990), rng.randrange(people)) for s, k in stems[:orgs]]
    full: list[Person] = []
    for i, p in enumerate(crowd):
        mentor = rng.randrange(people - 1)
        full.append(
            Person(
                p.given,
                p.family,
                p.born,
                p.birthplace,
                p.field,
                employer=rng.randrange(orgs),
                mentor=mentor if mentor < i else mentor + 1,  # never one's own mentor
                role=rng.choice(_ROLES),
            )
        )
    titles = sorted({f"{a} {n}" for a in _TITLE_ADJ for n in _TITLE_NOUN})
    rng.shuffle(titles)
    work_list = [
        Work(f"The {t}", rng.choice(_WORK_KINDS), rng.randrange(people), rng.randint(1880, 2010), rng.choice(_FIELDS))
        for t in titles[:works]
    ]
    return World(full, org_list, province, work_list)


def _person_ref(p: Person, rng: random.Random) -> str:
    return rng.choice((p.name, p.name, p.name, f"{p.given[0]}. {p.family}"))


def _org_ref(o: Org, rng: random.Random) -> str:
    return rng.choice((o.name, o.name, o.legal))


def _pick(rng: random.Random, templates: Sequence[str], **values: object) -> str:
    return rng.choice(templates).format(**values)


_EMPLOYER = (
    "{p} joined {o} in {y} and later served as its {role} for many years.",
    "In {y} {o} hired {p}, who would spend the next {n} years there as {role}.",
    "{p} worked for {o} for most of a long career, rising to {role} by {y}.",
    "As {role} of {o} from {y}, {fam} oversaw a staff of several hundred people.",
    "For {n} years the employer of {p} was {o}, where {fam} became {role}.",
)
_EMPLOYER_FILLER = (
    "{fam} also lectured in {city} and corresponded with {other} about {topic}.",
    "Before that, {fam} had spent a summer in {city} studying {topic}.",
    "A portrait of {fam} by {other} hangs in a gallery in {city}.",
)
_BIRTH = (
    "{p} was born in {city} in {born} and later trained in {topic}.",
    "Born in {born} in the city of {city}, {p} became known for work in {topic}.",
    "{city} was the birthplace of {p}, born there in {born}, a specialist in {topic}.",
    "{p} grew up in {city}, where {fam} was born in {born}, before turning to {topic}.",
)
_BIRTH_FILLER = (
    "The family later spent several winters in {city}.",
    "{fam} kept a lifelong friendship with {other}.",
    "Early letters from {fam} describe a journey to {city}.",
)
_MENTOR = (
    "{p} studied under {m}, whose seminars on {topic} shaped the rest of that career.",
    "{m} was the doctoral adviser of {p} and read every draft of the first book.",
    "Early in the career of {p}, {m} acted as mentor and introduced {fam} to {topic}.",
    "{p} always credited {m} as the teacher who made {fam} take up {topic}.",
)
_SEAT = (
    "{o} has its seat in {city}, where its main building faces the old market.",
    "Headquartered in {city}, {o} was long one of the largest employers there.",
    "From its head office in {city}, {o} runs sites across the whole country.",
    "The head office of {o} stands in the old quarter of {city} near the river.",
)
_SEAT_FILLER = (
    "It also keeps a small branch in {city2} and a warehouse near {city3}.",
    "Its annual conference is held in {city2}.",
    "A sister office in {city2} closed some years ago.",
)
_FOUNDER = (
    "{o} was founded in {y} by {f}, who ran it for the first decade.",
    "{f} established {o} in {y} with money borrowed from relatives.",
    "In {y} {f} set up {o}, at first with only a handful of staff.",
    "The founder of {o} was {f}, who opened its doors in {y}.",
)
_PROVINCE = (
    "{city} lies in the province of {prov}, on the main railway line to the coast.",
    "The city of {city} is part of the province of {prov} and is known for its markets.",
    "Within the province of {prov}, {city} is the town best known for its festivals.",
    "{city} belongs to {prov}, a province of farms, rivers and small harbours.",
)
_WORK = (
    "'{t}' is a {kind} on {topic} written by {a} and first published in {y}.",
    "{a} wrote the {kind} '{t}', which appeared in {y} and dealt with {topic}.",
    "Published in {y}, the {kind} '{t}' by {a} is still read by students of {topic}.",
)
_NOISE = (
    "{city} hosted a festival in {y} at which {p} and {q} spoke about {topic}; {o} paid for the hall.",
    "A square in {city} carries the name of {p}, and {o} restored the fountain there in {y}.",
    "Visitors from {city} and {city2} met {p} at the {y} congress on {topic}, sponsored by {o}.",
)


def _passages(w: World, rng: random.Random) -> None:
    def add(doc_id: str, title: str, fact: str, filler: str | None, key: tuple[str, object]) -> None:
        text = f"{fact} {filler}" if filler else fact
        if rng.random() < 0.5 and filler:
            text = f"{filler} {fact}"
        w.passages.append({"id": doc_id, "title": title, "text": text, "source": "multihop"})
        w.fact_doc[key] = doc_id
        w.fact_sentence[doc_id] = fact

    cities = sorted(w.province)
    for i, p in enumerate(w.people):
        o = w.orgs[p.employer]
        other = w.people[rng.randrange(len(w.people))]
        common = {"fam": p.family, "topic": p.field, "other": _person_ref(other, rng), "city": rng.choice(cities)}
        y = p.born + rng.randint(22, 35)
        add(
            f"mh-p{i:04d}-employer",
            p.name,
            _pick(
                rng,
                _EMPLOYER,
                p=_person_ref(p, rng),
                o=_org_ref(o, rng),
                y=y,
                n=rng.randint(8, 30),
                role=p.role,
                fam=p.family,
            ),
            _pick(rng, _EMPLOYER_FILLER, **common),
            ("employer", i),
        )
        add(
            f"mh-p{i:04d}-birth",
            p.name,
            _pick(rng, _BIRTH, p=p.name, city=p.birthplace, born=p.born, topic=p.field, fam=p.family),
            _pick(rng, _BIRTH_FILLER, **common),
            ("birth", i),
        )
        m = w.people[p.mentor]
        add(
            f"mh-p{i:04d}-mentor",
            p.name,
            _pick(rng, _MENTOR, p=_person_ref(p, rng), m=m.name, topic=m.field, fam=p.family),
            None,
            ("mentor", i),
        )
    for j, o in enumerate(w.orgs):
        c2, c3 = rng.sample(cities, 2)
        add(
            f"mh-o{j:04d}-seat",
            o.name,
            _pick(rng, _SEAT, o=_org_ref(o, rng), city=o.seat),
            _pick(rng, _SEAT_FILLER, city2=c2, city3=c3),
            ("seat", j),
        )
        add(
            f"mh-o{j:04d}-founder",
            o.name,
            _pick(rng, _FOUNDER, o=o.name, f=w.people[o.founder].name, y=o.founded),
            None,
            ("founder", j),
        )
    for city in cities:
        add(
            f"mh-c-{city.lower()}",
            city,
            _pick(rng, _PROVINCE, city=city, prov=w.province[city]),
            None,
            ("province", city),
        )
    for k, work in enumerate(w.works):
        author = w.people[work.author]
        add(
            f"mh-w{k:04d}",
            work.title,
            _pick(rng, _WORK, t=work.title, kind=work.kind, topic=work.topic, a=author.name, y=work.year),
            None,
            ("work", k),
        )
    for n in range(400):
        p, q = rng.sample(w.people, 2)
        city, city2 = rng.sample(cities, 2)
        text = _pick(
            rng,
            _NOISE,
            city=city,
            city2=city2,
            p=_person_ref(p, rng),
            q=_person_ref(q, rng),
            o=_org_ref(w.orgs[rng.randrange(len(w.orgs))], rng),
            y=rng.randint(1900, 2020),
            topic=rng.choice(_FIELDS),
        )
        w.passages.append({"id": f"mh-n{n:04d}", "title": city, "text": text, "source": "multihop"})


@dataclass(frozen=True, slots=True)
class _Draft:
    question: str
    kind: str
    hops: tuple[str, ...]  # gold passages in hop order (for a comparison: side by side)
    answer: str
    entity_heavy: bool = True


def _lookup(w: World, rng: random.Random) -> _Draft:
    which = rng.randrange(4)
    if which == 0:
        i = rng.randrange(len(w.people))
        p = w.people[i]
        q = rng.choice(("Where was {p} born?", "In which city was {p} born?", "What is the birthplace of {p}?"))
        return _Draft(q.format(p=p.name), "lookup", (w.fact_doc["birth", i],), p.birthplace)
    if which == 1:
        j = rng.randrange(len(w.orgs))
        o = w.orgs[j]
        q = rng.choice(("Who founded {o}?", "Who established {o}?"))
        return _Draft(q.format(o=o.name), "lookup", (w.fact_doc["founder", j],), w.people[o.founder].name)
    if which == 2:
        city = rng.choice(sorted(w.province))
        return _Draft(f"In which province is {city}?", "lookup", (w.fact_doc["province", city],), w.province[city])
    k = rng.randrange(len(w.works))
    work = w.works[k]
    return _Draft(f"Who wrote '{work.title}'?", "lookup", (w.fact_doc["work", k],), w.people[work.author].name, False)


def _bridge(w: World, rng: random.Random) -> _Draft:
    i = rng.randrange(len(w.people))
    p = w.people[i]
    which = rng.randrange(5)
    if which == 0:
        q = rng.choice(
            ("In which city is the employer of {p} based?", "Where does the organisation {p} worked for have its seat?")
        )
        hops = (w.fact_doc["employer", i], w.fact_doc["seat", p.employer])
        return _Draft(q.format(p=p.name), "bridge", hops, w.orgs[p.employer].seat)
    if which == 1:
        hops = (w.fact_doc["employer", i], w.fact_doc["founder", p.employer])
        answer = w.people[w.orgs[p.employer].founder].name
        return _Draft(f"Who founded the organisation that employed {p.name}?", "bridge", hops, answer)
    if which == 2:
        q = rng.choice(("In which city was the mentor of {p} born?", "Where was the teacher of {p} born?"))
        hops = (w.fact_doc["mentor", i], w.fact_doc["birth", p.mentor])
        return _Draft(q.format(p=p.name), "bridge", hops, w.people[p.mentor].birthplace)
    if which == 3:
        j = rng.randrange(len(w.orgs))
        f = w.orgs[j].founder
        hops = (w.fact_doc["founder", j], w.fact_doc["employer", f])
        answer = w.orgs[w.people[f].employer].name
        return _Draft(f"Which organisation employed the founder of {w.orgs[j].name}?", "bridge", hops, answer)
    k = rng.randrange(len(w.works))
    work = w.works[k]
    hops = (w.fact_doc["work", k], w.fact_doc["birth", work.author])
    return _Draft(
        f"Where was the author of '{work.title}' born?", "bridge", hops, w.people[work.author].birthplace, False
    )


def _comparison(w: World, rng: random.Random) -> _Draft:
    which = rng.randrange(3)
    i, j = rng.sample(range(len(w.people)), 2)
    p, q = w.people[i], w.people[j]
    hops: tuple[str, ...]
    if which == 0 and p.born != q.born:
        hops = (w.fact_doc["birth", i], w.fact_doc["birth", j])
        return _Draft(
            f"Who was born earlier, {p.name} or {q.name}?", "comparison", hops, (p if p.born < q.born else q).name
        )
    if which == 1:
        a, b = rng.sample(range(len(w.orgs)), 2)
        oa, ob = w.orgs[a], w.orgs[b]
        if oa.founded != ob.founded:
            hops = (w.fact_doc["founder", a], w.fact_doc["founder", b])
            first = oa if oa.founded < ob.founded else ob
            return _Draft(f"Which was founded first, {oa.name} or {ob.name}?", "comparison", hops, first.name)
    if p.employer == q.employer:
        return _comparison(w, rng)
    hops = (
        w.fact_doc["employer", i],
        w.fact_doc["seat", p.employer],
        w.fact_doc["employer", j],
        w.fact_doc["seat", q.employer],
    )
    same = w.orgs[p.employer].seat == w.orgs[q.employer].seat
    return _Draft(
        f"Are the employers of {p.name} and {q.name} based in the same city?",
        "comparison",
        hops,
        "yes" if same else "no",
    )


def _chain3(w: World, rng: random.Random) -> _Draft:
    i = rng.randrange(len(w.people))
    p = w.people[i]
    which = rng.randrange(3)
    if which == 0:
        o = w.orgs[p.employer]
        hops = (w.fact_doc["employer", i], w.fact_doc["seat", p.employer], w.fact_doc["province", o.seat])
        q = rng.choice(
            (
                "In which province is the city where the employer of {p} has its seat?",
                "Which province is the employer of {p} based in?",
            )
        )
        return _Draft(q.format(p=p.name), "chain3", hops, w.province[o.seat])
    if which == 1:
        m = w.people[p.mentor]
        hops = (w.fact_doc["mentor", i], w.fact_doc["birth", p.mentor], w.fact_doc["province", m.birthplace])
        return _Draft(f"In which province was the mentor of {p.name} born?", "chain3", hops, w.province[m.birthplace])
    k = rng.randrange(len(w.works))
    work = w.works[k]
    author = w.people[work.author]
    hops = (w.fact_doc["work", k], w.fact_doc["employer", work.author], w.fact_doc["seat", author.employer])
    return _Draft(
        f"In which city is the organisation that employed the author of '{work.title}' based?",
        "chain3",
        hops,
        w.orgs[author.employer].seat,
        False,
    )


def _chain4(w: World, rng: random.Random) -> _Draft:
    if rng.random() < 0.6:
        i = rng.randrange(len(w.people))
        p = w.people[i]
        m = w.people[p.mentor]
        o = w.orgs[m.employer]
        hops = (
            w.fact_doc["mentor", i],
            w.fact_doc["employer", p.mentor],
            w.fact_doc["seat", m.employer],
            w.fact_doc["province", o.seat],
        )
        return _Draft(
            f"In which province is the seat of the organisation that employed the mentor of {p.name}?",
            "chain4",
            hops,
            w.province[o.seat],
        )
    k = rng.randrange(len(w.works))
    work = w.works[k]
    author = w.people[work.author]
    o = w.orgs[author.employer]
    hops = (
        w.fact_doc["work", k],
        w.fact_doc["employer", work.author],
        w.fact_doc["seat", author.employer],
        w.fact_doc["province", o.seat],
    )
    return _Draft(
        f"In which province is the employer of the author of '{work.title}' based?",
        "chain4",
        hops,
        w.province[o.seat],
        False,
    )


_MAKERS: dict[str, Callable[[World, random.Random], _Draft]] = {
    "lookup": _lookup,
    "bridge": _bridge,
    "comparison": _comparison,
    "chain3": _chain3,
    "chain4": _chain4,
}


def _stating(kind: str, hops: tuple[str, ...]) -> set[str]:
    """Grade 2: the passages that state the answer (each side's last hop in a comparison)."""
    if kind != "comparison":
        return {hops[-1]}
    return set(hops[1::2]) if len(hops) == 4 else set(hops)


def _questions(w: World, rng: random.Random) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    seen: set[str] = set()
    for kind in KINDS:
        made = 0
        while made < QUESTION_COUNTS[kind]:
            d = _MAKERS[kind](w, rng)
            if d.question in seen or len(set(d.hops)) != len(d.hops):
                continue  # the same question twice, or a chain that returns to a passage it read
            seen.add(d.question)
            made += 1
            last = _stating(kind, d.hops)
            out.append(
                {
                    "id": f"mh-{kind}-{made:03d}",
                    "question": d.question,
                    "type": "lookup" if kind == "lookup" else "multi_hop",
                    "kind": kind,
                    "entity_heavy": d.entity_heavy,
                    "gold": {doc: 2 if doc in last else 1 for doc in d.hops},
                    "hops": list(d.hops),
                    "key_facts": [w.fact_sentence[doc] for doc in d.hops if doc in last],
                    "answer_values": [] if d.answer in ("yes", "no") else [d.answer],
                    "answer": d.answer,
                    "principal": PRINCIPAL,
                }
            )
    return out


def assign_splits(questions: Iterable[dict[str, object]], seed: int = SPLIT_SEED) -> dict[str, str]:
    """Stratified by kind: within each kind, questions ordered by sha256("<seed>:<id>"), the first third test
    (as `corpora/northwind/split_questions.py` splits the bundled set by type)."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        by_kind[str(q["kind"])].append(str(q["id"]))
    out: dict[str, str] = {}
    for ids in by_kind.values():
        ordered = sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
        n_test = round(len(ordered) * TEST_SHARE)
        out |= {qid: "test" if n < n_test else "dev" for n, qid in enumerate(ordered)}
    return out


def generate(seed: int = SEED) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(passages, questions), each question with its split."""
    rng = random.Random(seed)
    world = build_world(rng)
    _passages(world, rng)
    questions = _questions(world, rng)
    split = assign_splits(questions)
    for q in questions:
        q["split"] = split[str(q["id"])]
    return world.passages, questions


def to_jsonl(rows: Iterable[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
