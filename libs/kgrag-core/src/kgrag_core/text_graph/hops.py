"""Query-time rules of the second hop: which questions are bridge-shaped, what a second-hop query asks,
and where the bridged passages go in the final ranking.

A bridge question names an entity and asks for an attribute of a *related* entity ("the city where the
company that employs X is seated"): the passage that answers it does not name X, so neither hybrid nor a walk
seeded by X's name ranks it; a second query on the related entity's name does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Nouns that denote another entity by its relation to the one named (English relational nouns), as opposed to
# an attribute of the named entity itself ("the population of X" is a lookup).
_RELATION_NOUN = (
    r"(?:employer|organi[sz]ation|company|firm|institute|institution|university|school|college|museum|"
    r"teacher|mentor|tutor|student|pupil|supervisor|advisor|adviser|manager|boss|owner|founder|author|writer|"
    r"director|creator|publisher|parent|father|mother|son|daughter|child|spouse|wife|husband|partner|"
    r"sibling|brother|sister|successor|predecessor|team|club|employee|colleague|friend|birthplace|seat|"
    r"headquarters|city|town|country|province|region)"
)
_NAMED = r"(?:[A-ZÀ-Þ][\w\-]*(?:\s+[A-ZÀ-Þ][\w\-]*)*|['\"‘“][^'\"’”]+['\"’”])"
# "the employer of Mateo Berg", "the organisation Hugo Tanaka worked for", "the company that employed ...",
# "the seat of the organisation ...": a relational noun tied to a name or to another relative clause.
_RELATED = re.compile(
    rf"\bthe\s+{_RELATION_NOUN}\s+(?:of\s+(?:the\s+)?(?:\w+\s+)?{_NAMED}|of\s+the\s+\w+|(?:that|who|which|whom)\s+\w+"
    rf"|{_NAMED}\s+\w+\s+(?:for|at|with|under|in))",
)
# The question asks for something other than the related entity itself ("Who is the employer of X?" is one hop).
_ASKS_ATTRIBUTE = re.compile(r"^\s*(?:in\s+which|which|what|where|when|how|in\s+what|who|whom)\b", re.IGNORECASE)
_ONE_HOP = re.compile(
    rf"^\s*(?:who|what|which)\s+(?:is|was|are|were)\s+the\s+\w+\s+of\s+{_NAMED}\s*\??\s*$", re.IGNORECASE
)
_ENTITY = re.compile(rf"(?<!^)(?<![.?!]\s){_NAMED}")
_NAME_WORD = re.compile(r"['\"‘“][^'\"’”]+['\"’”]|(?<=\s)[A-ZÀ-Þ][\w\-]*")


def bridge_shaped(question: str) -> bool:
    """The question names an entity and asks for an attribute of an entity related to it."""
    q = question.strip()
    if _ONE_HOP.search(q):
        return False
    return bool(_ASKS_ATTRIBUTE.search(q) and _RELATED.search(q) and _ENTITY.search(q[1:]))


# "Are the employers of X and Y based in the same city?": the same relation of two named entities, compared
# through an attribute of each related one (two bridges, one per entity).
_PAIRED = re.compile(
    rf"^\s*(?:are|were|do|did)\s+the\s+{_RELATION_NOUN}s\s+of\s+{_NAMED}\s+and\s+{_NAMED}\s+\w+", re.IGNORECASE
)


def paired_bridge(question: str) -> bool:
    """The question compares an attribute of the entities related to two named ones."""
    return bool(_PAIRED.search(question.strip()))


# Lower case only: a capitalised one is part of a name ("Halden University").
_RELATION_WORD = re.compile(rf"\b{_RELATION_NOUN}\b")
# Where a thing is: the place it is in ("the city where X has its seat", "based", "born") is one passage, and a
# region asked of it ("in which province is the employer of X based") one more: the place's own passage says
# which region it lies in. Several words for the same place are one passage.
_PLACE = re.compile(r"\b(?:city|town|birthplace|seat|headquarters|where|based|born|seated|headquartered|located)\b")
_REGION = re.compile(r"\b(?:province|country|region)\b")
_PLACE_WORDS = ("city", "town", "birthplace", "seat", "headquarters", "province", "country", "region")


def chain_length(question: str) -> int:
    """How many passages a bridge-shaped question's chain needs, read from the relations it stacks: each
    relational noun between entities ("the organisation that employed the mentor of X") is one passage,
    where the last one is (a city, "based", "born") one more, and a region of that place one more; at
    least two (the named entity's and the related one's)."""
    relations = [w for w in _RELATION_WORD.findall(question) if w not in _PLACE_WORDS]
    places = 2 if _REGION.search(question) else 1 if _PLACE.search(question) else 0
    return max(2, len(relations) + places)


def hop_query(bridge: str, question: str) -> str:
    """The second-hop query: the bridge's name plus what the question asks, without the question's own names
    (the first hop's entity would pull its own passages back in)."""
    asked = " ".join(_NAME_WORD.sub(" ", " " + question).split())
    return f"{bridge} {asked}".strip()


def place_bridged(ranked: Sequence[str], bridged: Sequence[str], *, top: int, slots: int, keep: int) -> list[str]:
    """`ranked` with up to `slots` bridged passages (best first) in the last slots of its first `top`, never
    before position `keep`; the passages they push down follow them, so nothing leaves the ranking."""
    slots = max(0, min(slots, top - keep))
    head = list(ranked[: top - slots])
    picks = [c for c in dict.fromkeys(bridged) if c not in head][:slots]
    rest = [c for c in ranked if c not in head and c not in picks]
    return head + picks + rest
