"""A rule-based question router: which retrieval a question needs, how sure the rules are, and why.

Hybrid search is the default (seed 000: it answers single facts as well as the graph, several times
faster); a question goes to the graph layer only when its wording shows relational structure, a time
dimension, a plan-versus-fact doubt, a corpus-wide theme or a named entity to describe. Each rule adds
weight to one kind; the heaviest kind wins if it clears `_MIN_WEIGHT`, otherwise the question is a lookup.
Dates alone weigh little: "in November 2024" usually anchors a lookup or a multi-hop question rather
than asking how something changed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class QuestionKind(StrEnum):
    LOOKUP = "lookup"
    ENTITY = "entity"
    MULTI_HOP = "multi_hop"
    TEMPORAL = "temporal"
    MODALITY = "modality"
    GLOBAL = "global"


@dataclass(frozen=True, slots=True)
class Route:
    kind: QuestionKind
    confidence: float  # 0..1: how clearly the winning rules beat the others
    signals: tuple[str, ...]  # "kind:cue" for every rule that fired, strongest first
    # A low-confidence route's runner-up: the graph searcher runs both strategies and fuses them.
    alternative: QuestionKind | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind.value,
            "confidence": round(self.confidence, 3),
            "signals": list(self.signals),
        }
        if self.alternative is not None:
            out["alternative"] = self.alternative.value
        return out

    @property
    def strategies(self) -> tuple[QuestionKind, ...]:
        """Every kind whose strategy runs: the route's, then its runner-up when it has one."""
        if self.alternative is None or self.alternative is self.kind:
            return (self.kind,)
        return (self.kind, self.alternative)


class QuestionRouter(Protocol):
    """Anything that routes a question (the rules below, `LearnedRouter`); `version` names it in traces."""

    @property
    def version(self) -> str: ...

    def route(self, question: str) -> Route: ...


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: QuestionKind
    cue: str
    weight: float
    pattern: re.Pattern[str]


_NAME = r"[A-ZÀ-Þ][\w\-]*(?:\s+[A-ZÀ-Þ][\w\-]*)*"  # a capitalised run: "Zoë Müller", "Kestrel Pharma"
_ROLE_NOUN = (
    r"(?:team|system|service|person|people|warehouse|site|vendor|company|customer|trackers?|owner|manager|"
    r"incident|project|supplier|office|application|app|platform|tool)"
)


def _rule(kind: QuestionKind, cue: str, weight: float, pattern: str, *, case: bool = False) -> _Rule:
    flags = 0 if case else re.IGNORECASE
    return _Rule(kind, cue, weight, re.compile(pattern, flags))


_RULES: tuple[_Rule, ...] = (
    # Multi-hop: a noun picked out by a relation to another thing ("the team that owns ...").
    _rule(
        QuestionKind.MULTI_HOP,
        "relative clause",
        2.0,
        rf"\bthe\s+(?:\w+\s+)?{_ROLE_NOUN}\s+(?:that|who|whose|where|which|behind|involved|owning|leading|"
        r"(?:managed|owned|led|run|used|operated|made|built|stored)\s+by)\b",
    ),
    _rule(
        QuestionKind.MULTI_HOP,
        "who owns/leads",
        1.0,
        r"\bwho\s+(?:owns|leads|manages|runs|was\s+the|is\s+the)\b.*\b(?:team|system|owner|that|whose)\b",
    ),
    _rule(QuestionKind.MULTI_HOP, "the X of the Y", 1.5, rf"\bthe\s+\w+\s+of\s+the\s+(?:\w+\s+)?{_ROLE_NOUN}\b"),
    _rule(QuestionKind.MULTI_HOP, "at the time of an event", 1.5, r"\bat\s+the\s+time\b"),
    _rule(QuestionKind.MULTI_HOP, "chained question", 1.0, r",\s+and\s+(?:who|which|until\s+when|where)\b"),
    _rule(QuestionKind.MULTI_HOP, "which ... of the ... that", 1.5, r"\bwhich\b.+\bof\s+the\b.+\b(?:that|who|whose)\b"),
    # Temporal: the question asks for the value now, or for a change.
    _rule(
        QuestionKind.TEMPORAL,
        "current/now/latest",
        1.5,
        r"\b(?:current|currently|now|latest|most\s+recent|as\s+of|today|still)\b",
    ),
    _rule(QuestionKind.TEMPORAL, "change", 1.5, r"\b(?:chang(?:e|ed|es|ing)|since|over\s+time|evolv\w*|went\s+from)\b"),
    _rule(QuestionKind.TEMPORAL, "before/after", 1.0, r"\b(?:before|after|until|anymore|previous(?:ly)?|used\s+to)\b"),
    _rule(QuestionKind.TEMPORAL, "date", 0.5, r"\b(?:in|during)\s+(?:\w+\s+)?(?:19|20)\d\d\b"),
    # Modality: was it done, or only planned, proposed, trialled?
    _rule(
        QuestionKind.MODALITY,
        "yes/no about an event",
        1.5,
        r"^\s*(?:did|was|were|has|have|is|are|will|does)\s+(?!there\b)",
        case=False,
    ),
    _rule(
        QuestionKind.MODALITY,
        "plan/proposal",
        1.0,
        r"\b(?:plan|planned|plans|planning|proposal|proposed|intend\w*|decided|considering|pilot|trial|"
        r"roadmap|carried\s+out|go\s+ahead|went\s+ahead)\b",
    ),
    _rule(QuestionKind.MODALITY, "did they", 1.0, r"\bdid\s+(?:they|it|we|he|she)\b"),
    # Global: themes over many documents.
    _rule(
        QuestionKind.GLOBAL,
        "themes/summary",
        2.0,
        r"\b(?:themes?|overall|across|summari[sz]e|summary|overview|recurring|trends?|patterns?|"
        r"most\s+often|in\s+general|common(?:ly)?)\b",
    ),
    _rule(
        QuestionKind.GLOBAL,
        "category noun",
        1.5,
        r"\b(?:causes|measures|practices|lessons|complaints|issues|problems|risks|initiatives|changes)\b",
    ),
    _rule(
        QuestionKind.GLOBAL,
        "enumeration",
        1.0,
        r"^\s*(?:which|what)\s+(?:\w+\s+)?(?:customers|teams|systems|"
        r"sites|vendors|people|incidents|projects)\s+(?:were|are|have|had|did)\b",
    ),
    _rule(
        QuestionKind.GLOBAL,
        "year range",
        1.0,
        r"\bbetween\s+(?:19|20)\d\d\s+and\s+(?:19|20)\d\d\b|(?:19|20)\d\d\s*[–-]\s*(?:19|20)?\d\d\b",
    ),
    # Entity-centric: describe a named thing.
    _rule(
        QuestionKind.ENTITY,
        "tell me about/what is NAME",
        1.0,
        rf"^\s*(?i:(?:who|what)(?:\s+is|'s)|tell\s+me\s+about|describe|what\s+do\s+(?:we|you)\s+know\s+about|"
        rf"what\s+does|what\s+role\s+does)\s+(?!the\b|a\b|an\b)(?>{_NAME})(?!['’]s?\s+(?!relationship|role))\b",
        case=True,
    ),
    # "An overview of Brio Robotics" describes one thing, however global "overview" sounds.
    _rule(QuestionKind.ENTITY, "overview of NAME", 2.5, rf"\b(?i:overview|summary|profile)\s+of\s+{_NAME}", case=True),
    _rule(
        QuestionKind.ENTITY,
        "relationship/role of NAME",
        1.0,
        r"\b(?:relationship\s+with|role\s+(?:does|of)|responsible\s+for|work\s+on|and\s+how\s+is\s+it)\b",
    ),
)

_MIN_WEIGHT = 1.0  # below this the cues are too weak to leave the default (hybrid) path
_DEFAULT_LOOKUP_CONFIDENCE = 0.7
# Fixed precedence for equal weights, so the choice never depends on rule order alone: the more
# specific shape wins (a relational question that also says "current" needs the hops first).
_PRECEDENCE = (
    QuestionKind.MULTI_HOP,
    QuestionKind.GLOBAL,
    QuestionKind.TEMPORAL,
    QuestionKind.MODALITY,
    QuestionKind.ENTITY,
)


def route(question: str) -> Route:
    """Classify a question by its wording; a lookup when no rule clears the minimum weight."""
    weights: dict[QuestionKind, float] = {}
    fired: list[tuple[float, str]] = []
    for rule in _RULES:
        if rule.pattern.search(question):
            weights[rule.kind] = weights.get(rule.kind, 0.0) + rule.weight
            fired.append((rule.weight, f"{rule.kind.value}:{rule.cue}"))
    signals = tuple(s for _, s in sorted(fired, key=lambda f: (-f[0], f[1])))
    if not weights or max(weights.values()) < _MIN_WEIGHT:
        # Weak cues only lower the confidence that this is a plain lookup.
        weak = sum(weights.values())
        return Route(QuestionKind.LOOKUP, round(_DEFAULT_LOOKUP_CONFIDENCE - 0.2 * weak, 3), signals)
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], _PRECEDENCE.index(kv[0])))
    kind, top = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    # Margin over the runner-up, damped when the winner rests on a single weak cue.
    confidence = (0.5 + 0.5 * (top - runner_up) / top) * min(1.0, 0.6 + 0.2 * top)
    return Route(kind, round(min(0.95, confidence), 3), signals)


def _fingerprint() -> str:
    """A version of the rules that moves whenever a rule, weight, threshold or precedence does (traces name it)."""
    parts = [f"{r.kind.value}|{r.cue}|{r.weight}|{r.pattern.pattern}|{r.pattern.flags}" for r in _RULES]
    parts += [str(_MIN_WEIGHT), str(_DEFAULT_LOOKUP_CONFIDENCE), ",".join(k.value for k in _PRECEDENCE)]
    return "rules-" + hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:12]


ROUTER_VERSION = _fingerprint()


class RuleRouter:
    """The pattern list above as a `QuestionRouter`."""

    version = ROUTER_VERSION

    def route(self, question: str) -> Route:
        return route(question)
