"""The words that let tier 2 propose a relation between two mentions of one sentence.

A cue is read in the text between two neighbouring mentions (the gap) or right after the later one ("José
Núñez, Atlas on-call owner"). The cue names the relation; its direction says which mention is the subject.
Where the ontology's endpoint types already decide (a Person LEADS a Team, never the reverse) the cue says
BY_TYPE and one cue covers both "Priya leads Routing" and "Routing, led by Priya". The lists are short on
purpose: tier 2 proposes at low confidence, and a wrong edge costs more than a missing one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Direction(StrEnum):
    FORWARD = "forward"  # the earlier mention is the subject: "Atlas runs on Cobalt Cloud"
    BACKWARD = "backward"  # the later mention is the subject: "Atlas replaces Legacy Planner"
    BY_TYPE = "by_type"  # whichever order the ontology allows; forward when it allows both


class CuePlace(StrEnum):
    GAP = "gap"  # between the two mentions
    AFTER = "after"  # right after the later mention: "Priya Raman (Routing EM)"


@dataclass(frozen=True, slots=True)
class RelationCue:
    relation: str
    pattern: re.Pattern[str]
    direction: Direction
    place: CuePlace = CuePlace.GAP
    # A cue that also occurs inside another relation's wording: "on-call owner" is not OWNS.
    unless: re.Pattern[str] | None = None


def _cue(
    relation: str,
    pattern: str,
    direction: Direction = Direction.BY_TYPE,
    place: CuePlace = CuePlace.GAP,
    unless: str | None = None,
) -> RelationCue:
    flags = re.IGNORECASE
    return RelationCue(
        relation,
        re.compile(pattern, flags),
        direction,
        place,
        re.compile(unless, flags) if unless is not None else None,
    )


# How much text after the later mention an AFTER cue may be found in, and the longest gap read at all.
AFTER_WINDOW = 24
MAX_GAP = 80
# Words allowed between a gap cue and the later mention: "owned by the Tracking team", "uses the Beacon API".
MAX_WORDS_AFTER_CUE = 3
# An AFTER cue describes the later mention's role only when nothing but apposition joins the two:
# "Priya Raman (Routing EM)", "Kenji as Atlas on-call owner"; not "Priya met the Platform lead".
APPOSITION_GAP = re.compile(r"^(?:[\s,(:\-\u2013\u2014]|\bas\b|\bis\b|\bthe\b|\bour\b)*$", re.IGNORECASE)

_ON_CALL = r"\bon[- ]call\b"

RELATION_CUES: tuple[RelationCue, ...] = (
    # LEADS: a Person leads a Team, Site, Project or Organization; the types give the direction.
    _cue(
        "LEADS",
        r"\b(?:leads|led by|lead of|leader of|heads|headed by|head of|manages|managed by|manager of)\b",
        # "LEJ-2 shift leads", "the team leads": the plural noun, not the verb.
        unless=r"\b(?:shift|team|dispatch|tech|site|project|engineering|group) (?:leads|heads)\b",
    ),
    _cue("LEADS", r"\b(?:site|engineering|team|project) (?:manager|lead)\b", unless=_ON_CALL),
    _cue("LEADS", r"\b(?:lead|manager|EM|head)\s*:", unless=_ON_CALL),
    _cue("LEADS", r"^\s*(?:EM|lead|manager|team lead|site manager|engineering manager)\b", place=CuePlace.AFTER),
    # OWNS: a Team or Person owns a System or Project.
    _cue("OWNS", r"\b(?:owns|owned by|owning team|owner of|ownership of)\b", unless=_ON_CALL),
    # ON_CALL_FOR: a Person is on call for a System.
    # "takes over as Atlas on-call owner from José Núñez": José is the previous owner, not the current one.
    _cue("ON_CALL_FOR", _ON_CALL, unless=r"\b(?:from|previous|previously|former|formerly|ex|until|was)\b"),
    _cue("ON_CALL_FOR", r"^\s*on[- ]call\b", place=CuePlace.AFTER),
    # USES: both ends may be Systems, so the wording gives the direction.
    _cue("USES", r"\b(?:uses|used|using|runs on|running on|hosted on|hosted by|built on|runs in)\b", Direction.FORWARD),
    _cue("USES", r"\b(?:hosts|used by|powers)\b", Direction.BACKWARD),
    _cue("DEPENDS_ON", r"\b(?:depends on|dependent on|relies on|reads from|calls)\b", Direction.FORWARD),
    _cue("CUSTOMER_OF", r"\bcustomers? of\b|\bbuys from\b", Direction.FORWARD),
    _cue("CUSTOMER_OF", r"\bcustomers? (?:include|includes|including|such as)\b", Direction.BACKWARD),
    _cue("VENDOR_OF", r"\b(?:vendor|supplier|provider) (?:of|to|for)\b|\bsupplies\b", Direction.FORWARD),
    _cue("AFFECTED", r"\b(?:affect(?:s|ed|ing)?|impact(?:s|ed|ing)?|took down|degraded)\b"),
    _cue(
        "MIGRATES_TO",
        r"\b(?:migrat(?:e|es|ed|ing|ion)|mov(?:e|es|ed|ing)|switch(?:es|ed|ing)?|port(?:s|ed|ing)?)"
        r"(?: \w+){0,3}? (?:to|onto)\b|\breplaced by\b",
        Direction.FORWARD,
    ),
    _cue("MIGRATES_TO", r"\breplac(?:es|ed|ing)\b(?! by)", Direction.BACKWARD),
    # MEMBER_OF / WORKS_AT / REPORTS_TO: a Person's place in the organisation.
    _cue("MEMBER_OF", r"\b(?:join(?:s|ed|ing)?|member of|works? for|part of)\b"),
    _cue("WORKS_AT", r"\b(?:works? (?:at|in)|based (?:at|in)|stationed at)\b"),
    _cue("REPORTS_TO", r"\breports? (?:directly )?to\b", Direction.FORWARD),
    _cue("LOCATED_IN", r"\b(?:located|headquartered|situated) in\b|^\s*(?:in|\()\s*$", Direction.FORWARD),
    _cue("SERVED_AT", r"\bserved (?:from|at|out of)\b|\bshipped from\b"),
    _cue("ABOUT", r"\b(?:about|regarding|concerning)\b"),
    _cue("REPORTED", r"\b(?:reported|raised|opened|filed)\b"),
)

# Conversation mechanics: who asked, said or generated something is not a relationship.
CONVERSATION_MECHANICS = re.compile(
    r"\b(?:ask(?:s|ed)?|suggest(?:s|ed)?|repl(?:y|ies|ied)|answer(?:s|ed)?|sa(?:y|ys|id)|told|tell(?:s)?"
    r"|wr(?:ote|ites)|generat(?:e|es|ed)|recommend(?:s|ed)?|respond(?:s|ed)?|prompt(?:s|ed)?|chat(?:s|ted)?)\b",
    re.IGNORECASE,
)
# A new clause starts between the two mentions: its subject is someone else ("from RTM-1 in Rotterdam, and
# their US subsidiary uses Beacon").
CLAUSE_BREAK = re.compile(
    r"[;]|,\s+(?:and|but|or|while|whereas|so|when|where|which|who|although|because|if|unless)\b", re.IGNORECASE
)
# The later mention owns what follows it ("the on-call owner is Aisha's senior engineer"): it is not the endpoint.
POSSESSIVE_AFTER = re.compile(r"^['\u2019]s?\b")
# A question proposes nothing: "Kenji asked whether Atlas uses Beacon".
QUESTION = re.compile(
    r"\?\s*$|\b(?:ask(?:s|ed)?|wonder(?:s|ed)?) (?:whether|if|about|why|how|what|when|who)\b", re.IGNORECASE
)
# Assistants are never an endpoint: "ChatGPT generated a plan" says nothing about ChatGPT's relations.
ASSISTANT_NAMES = re.compile(
    r"^(?:the )?(?:chat ?gpt|gpt-?\d[\w.-]*|copilot|claude|gemini|bard|assistant|ai assistant|bot)$", re.IGNORECASE
)
