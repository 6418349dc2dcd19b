"""Entity linking: which canonical entities the question's mentions may name, ambiguity kept.

Spans are codes ("LEJ-2", "INC-2024-007"), quoted strings and runs of capitalised words; every
sub-run is looked up too, because "Kestrel Pharma's EDI" names "Kestrel Pharma". Lowercase words are
spans only when asked for (`lowercase`, the answer's facts read: "engineering", "the AMR pilot"), and then
link only an entity known by exactly those words; pronouns are never keys (seed 000: "his" as an alias
pulled a dozen strangers into every question), and a one-word span links only to an entity that is known
by exactly that spelling ("HIS" the framework, not "his"). When a span names several entities, all of them
stay, scored, so expansion can cover the candidates the question does not settle.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kgrag_core.extraction.identity import normalise_name
from kgrag_core.graph.light import ids_named
from kgrag_core.graph.model import EntitySummary
from kgrag_core.graph.ports import GraphReader
from kgrag_core.text_terms import STOPWORDS

# name -> (entity_id, similarity 0..1) for paraphrases the alias index does not know ("the money side").
EmbeddingSearch = Callable[[str], Sequence[tuple[str, float]]]

_CODE = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+\b|\b[A-Z]{2,}[0-9]+\b")
_QUOTED = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”|‘([^’]{2,80})’|(?<!\w)'([^']{2,80})'(?!\w)")
_TOKEN = re.compile(r"[^\W_][\w\-&.]*(?:['’]s?)?")
# Capitalised words that open questions or sentences and never name anything by themselves.
_FUNCTION_WORD_TEXT = (
    "who what which when where why how whom whose did does do is was were are has have had will would can could "
    "should tell describe summarise summarize list give show explain the a an in on at of for to and or but "
    "i he she it we they you me him her us them his hers its our their your my this that these those "
    "there here if since until before after during between "
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_WORD_TEXT.split())
_MAX_SPAN_WORDS = 5


@dataclass(frozen=True, slots=True)
class Mention:
    text: str
    start: int  # character offsets in the question
    end: int
    kind: str  # code | quoted | name


@dataclass(frozen=True, slots=True)
class LinkCandidate:
    entity: EntitySummary
    score: float  # 0..1, comparable across mentions
    via: str  # alias | embedding


@dataclass(frozen=True, slots=True)
class LinkedMention:
    mention: Mention
    candidates: tuple[LinkCandidate, ...]  # best first; more than one when the question is ambiguous

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


def candidate_spans(question: str, *, lowercase: bool = False) -> list[Mention]:
    """Every span that may name an entity, longest first within each run, deduplicated by text and offset.
    With `lowercase`, also every run of words that neither opens nor closes on a function word ("engineering",
    "travel freeze", "Brio Robotics AMR pilot"): kind `lower`, linked only to an entity known by exactly those
    words (`_named_exactly`), so a common word never reaches a stranger through a fuzzy alias."""
    found: dict[tuple[int, int], Mention] = {}
    for match in _CODE.finditer(question):
        found.setdefault((match.start(), match.end()), Mention(match.group(0), match.start(), match.end(), "code"))
    for match in _QUOTED.finditer(question):
        group = next(g for g in range(1, 5) if match.group(g) is not None)
        text = match.group(group).strip()
        if text:
            start = match.start(group)
            found.setdefault((start, start + len(text)), Mention(text, start, start + len(text), "quoted"))
    for run in _capitalised_runs(question):
        for size in range(min(len(run), _MAX_SPAN_WORDS), 0, -1):
            for first in range(len(run) - size + 1):
                words = run[first : first + size]
                start, end = words[0][1], words[-1][2]
                text = question[start:end]
                if size == 1 and _is_function_word(text):
                    continue
                found.setdefault((start, end), Mention(text, start, end, "name"))
    if lowercase:
        for start, end in _word_windows(question):
            found.setdefault((start, end), Mention(question[start:end], start, end, "lower"))
    return sorted(found.values(), key=lambda m: (-(m.end - m.start), m.start))


def _word_windows(question: str) -> list[tuple[int, int]]:
    """Offsets of every run of up to `_MAX_SPAN_WORDS` words inside one clause whose first and last words are
    content words (no function word, no stopword, no possessive inside)."""
    words = [(m.start(), m.start() + len(re.sub(r"['’]s?$", "", m.group(0)).rstrip(".")), m.group(0))
             for m in _TOKEN.finditer(question)]  # fmt: skip
    out: list[tuple[int, int]] = []
    for i in range(len(words)):
        for j in range(i, min(len(words), i + _MAX_SPAN_WORDS)):
            if j > i and (question[words[j - 1][1] : words[j][0]].strip() or words[j - 1][2][-2:] in ("'s", "’s")):
                break  # punctuation or a possessive between two words ends the run
            first, last = words[i][2], words[j][2]
            if _weak(first) or _weak(re.sub(r"['’]s?$", "", last)):
                continue
            out.append((words[i][0], words[j][1]))
    return out


def _weak(word: str) -> bool:
    folded = word.casefold().rstrip(".")
    return len(folded) < 3 or folded in _FUNCTION_WORDS or folded in STOPWORDS


def _is_function_word(word: str) -> bool:
    # "HIS" the system is a name; "His" opening a sentence is a pronoun.
    acronym = len(word) > 1 and word.isupper()
    return not acronym and word.casefold() in _FUNCTION_WORDS


def _capitalised_runs(question: str) -> list[list[tuple[str, int, int]]]:
    """Runs of consecutive capitalised tokens; a possessive ends a run ("Kestrel Pharma's EDI" -> two runs)."""
    runs: list[list[tuple[str, int, int]]] = []
    current: list[tuple[str, int, int]] = []
    previous_end = -1
    for match in _TOKEN.finditer(question):
        word = match.group(0)
        bare = re.sub(r"['’]s?$", "", word).rstrip(".")
        gap = question[previous_end : match.start()] if previous_end >= 0 else ""
        is_name = bool(bare) and bare[0].isupper() and not _is_function_word(bare)
        if current and (not is_name or gap.strip()):
            runs.append(current)
            current = []
        if is_name:
            current.append((bare, match.start(), match.start() + len(bare)))
            if bare != word.rstrip("."):  # a possessive closes the run after this word
                runs.append(current)
                current = []
        previous_end = match.end()
    if current:
        runs.append(current)
    return runs


def _named_exactly(span: str, entity: EntitySummary) -> bool:
    """The span is the entity's name or one of its aliases, case aside (a lower-case span's only way in)."""
    target = normalise_name(span)
    return any(normalise_name(form) == target for form in (entity.entity.name, *entity.aliases))


def _spelled_exactly(span: str, entity: EntitySummary) -> bool:
    def fold(text: str) -> str:
        return " ".join(unicodedata.normalize("NFKC", text).split())

    target = fold(span)
    return any(fold(form) == target for form in (entity.entity.name, *entity.aliases))


def link_entities(
    question: str,
    graph: GraphReader,
    acl_class_ids: Sequence[str] | None,
    *,
    embedding_search: EmbeddingSearch | None = None,
    max_candidates: int = 5,
    min_embedding_similarity: float = 0.75,
    lowercase: bool = False,
) -> list[LinkedMention]:
    """Link the question's spans to visible canonical entities; a span inside a linked span is not linked again.
    `lowercase`: also words written in lower case ("How many people work in engineering?"), see
    `candidate_spans`; off for the graph walk's seeds, on for the answer's read of the named entities' facts."""
    spans = candidate_spans(question, lowercase=lowercase)
    if not spans:
        return []
    keys = sorted({normalise_name(s.text) for s in spans} - {""})
    named = graph.entities_named(keys, acl_class_ids) if keys else {}
    linked: list[LinkedMention] = []
    covered: list[tuple[int, int]] = []
    for span in spans:
        if any(start <= span.start and span.end <= end for start, end in covered):
            continue
        entities = named.get(normalise_name(span.text), [])
        if len(span.text.split()) == 1 and span.kind == "name":
            entities = [e for e in entities if _spelled_exactly(span.text, e)]
        elif span.kind == "lower":
            entities = [e for e in entities if _named_exactly(span.text, e)]
        candidates = _score_alias_hits(span, entities)
        if not candidates and embedding_search is not None and span.kind not in ("code", "lower"):
            candidates = _embedding_candidates(span, graph, acl_class_ids, embedding_search, min_embedding_similarity)
        if candidates:
            linked.append(LinkedMention(span, tuple(candidates[:max_candidates])))
            covered.append((span.start, span.end))
    linked.sort(key=lambda lm: lm.mention.start)
    return linked


def linked_entity_ids(
    texts: Sequence[str], graph: GraphReader, acl_class_ids: Sequence[str] | None, *, max_candidates: int = 5
) -> set[str]:
    """The ids `link_entities` (without an embedding search) links the texts' spans to, all texts' names read
    together and without naming or counting the entities where that changes nothing
    (`kgrag_core.graph.light`): only a one-word name span (its spelling is checked against the entity's
    names) or a name with more than `max_candidates` entities (the best connected are kept) reads them whole."""
    spans_of = [candidate_spans(t) for t in texts]
    spans = [s for ss in spans_of for s in ss]
    keys = sorted({normalise_name(s.text) for s in spans} - {""})
    if not keys:
        return set()
    ids = ids_named(graph, keys, acl_class_ids)
    whole = {
        key
        for span in spans
        if (key := normalise_name(span.text))
        and ids.get(key)
        and ((len(span.text.split()) == 1 and span.kind == "name") or len(ids[key]) > max_candidates)
    }
    named = graph.entities_named(sorted(whole), acl_class_ids) if whole else {}
    linked: set[str] = set()
    for text_spans in spans_of:
        covered: list[tuple[int, int]] = []
        for span in text_spans:
            if any(start <= span.start and span.end <= end for start, end in covered):
                continue
            key = normalise_name(span.text)
            if key in named:
                entities = named[key]
                if len(span.text.split()) == 1 and span.kind == "name":
                    entities = [e for e in entities if _spelled_exactly(span.text, e)]
                found = [c.entity.entity.entity_id for c in _score_alias_hits(span, entities)[:max_candidates]]
            else:
                found = ids.get(key, [])
            if found:
                linked.update(found)
                covered.append((span.start, span.end))
    return linked


def _span_weight(span: Mention) -> float:
    # Codes and quotes are deliberate; a single capitalised word may just open a sentence; words in lower case
    # name something less surely than either.
    if span.kind in ("code", "quoted"):
        return 1.0
    if span.kind == "lower":
        return 0.6
    return 0.9 if len(span.text.split()) > 1 else 0.75


def _score_alias_hits(span: Mention, entities: Sequence[EntitySummary]) -> list[LinkCandidate]:
    if not entities:
        return []
    base = _span_weight(span)
    top_degree = max(e.degree for e in entities) or 1
    # Ambiguity lowers every candidate's score; better-connected namesakes rank first but keep company.
    share = 1.0 / len(entities) ** 0.5
    scored = [LinkCandidate(e, round(base * share * (0.8 + 0.2 * e.degree / top_degree), 4), "alias") for e in entities]
    scored.sort(key=lambda c: (-c.score, c.entity.entity.entity_id))
    return scored


def _embedding_candidates(
    span: Mention,
    graph: GraphReader,
    acl_class_ids: Sequence[str] | None,
    search: EmbeddingSearch,
    min_similarity: float,
) -> list[LinkCandidate]:
    out: list[LinkCandidate] = []
    seen: set[str] = set()
    for entity_id, similarity in search(span.text):
        if similarity < min_similarity:
            continue
        # The hook may know entities the caller cannot see: ask the graph, which applies the ACL.
        summary = graph.entity(entity_id, acl_class_ids)
        if summary is None or summary.entity.entity_id in seen:
            continue
        seen.add(summary.entity.entity_id)
        out.append(LinkCandidate(summary, round(_span_weight(span) * 0.8 * similarity, 4), "embedding"))
    out.sort(key=lambda c: (-c.score, c.entity.entity.entity_id))
    return out


def seed_entities(links: Sequence[LinkedMention]) -> list[tuple[EntitySummary, float]]:
    """Distinct linked entities with their best link score, best first (ties by id, never by set order)."""
    best: dict[str, tuple[EntitySummary, float]] = {}
    for lm in links:
        for c in lm.candidates:
            key = c.entity.entity.entity_id
            if key not in best or c.score > best[key][1]:
                best[key] = (c.entity, c.score)
    return sorted(best.values(), key=lambda es: (-es[1], es[0].entity.entity_id))


def passage_seeds(
    passages: Sequence[str],
    graph: GraphReader,
    acl_class_ids: Sequence[str] | None,
    *,
    weight: float,
) -> list[tuple[EntitySummary, float]]:
    """Entities named in the passages hybrid search ranked first, scored up to `weight`.

    A multi-hop question often names no entity of its chain ("the system that caused the 4 June sign-in
    outage"): the bridge entity is in the passage that answers the first hop, so that passage anchors the
    walk. Names are linked through the alias index exactly like the question's. Each mention counts for
    its best-connected reading only (a passage is context, not a question to keep open), entities without
    a visible edge have nowhere to lead, and a name several passages share (the system both the ticket and
    the incident report name) ranks first.
    """
    found: dict[str, EntitySummary] = {}
    totals: dict[str, float] = {}
    for passage in passages:
        for linked in link_entities(passage, graph, acl_class_ids):
            best = max(linked.candidates, key=lambda c: (c.entity.degree, c.score, c.entity.entity.entity_id))
            if best.entity.degree == 0:
                continue
            key = best.entity.entity.entity_id
            found[key] = best.entity
            totals[key] = totals.get(key, 0.0) + _span_weight(linked.mention)
    top = max(totals.values(), default=1.0)
    seeds = [(found[key], round(weight * total / top, 4)) for key, total in totals.items()]
    return sorted(seeds, key=lambda es: (-es[1], es[0].entity.entity_id))
