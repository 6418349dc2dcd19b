"""The text graph's phrase extractor: spaCy's NER and noun phrases from the shipped small model, plus links.

Noun phrases come from the dependency parser's noun chunks (`noun_phrases="parser"`, the tagger, parser
and attribute ruler loaded), or from the tagger alone with a Matcher over its part-of-speech tags
(`"tagger"`: adjectives and nouns ending in a noun; no parser, no attribute ruler, about a fifth cheaper
and nearly the same phrases once determiners are dropped), or not at all (`"off"`: NER only, tier 2's cost).
The pipeline is loaded once per instance, lazily.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Literal

import spacy
from spacy.language import Language
from spacy.matcher import Matcher
from spacy.tokens import Doc

from kgrag_adapters.spacy_ner.recognizer import MODEL_PACKAGE, PRONOUNS
from kgrag_core.text_graph.model import Mention, MentionKind
from kgrag_core.text_graph.patterns import link_mentions

NounPhrases = Literal["parser", "tagger", "off"]

# Entity labels that name things; dates, amounts and ordinals connect passages by coincidence.
_NAME_LABELS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "NORP", "LANGUAGE"}
)
_NOUN_TAGS = ["NN", "NNS", "NNP", "NNPS"]
# Modifiers a base noun phrase may start with; numbers and participles stay out ("2000 Brightwater",
# "been Mirela Jensen" are what they add).
_NP_PATTERN: list[dict[str, Any]] = [
    {"TAG": {"IN": ["JJ", "JJR", "JJS", *_NOUN_TAGS]}, "OP": "*"},
    {"TAG": {"IN": _NOUN_TAGS}},
]
_EXCLUDED: dict[NounPhrases, list[str]] = {
    "parser": ["lemmatizer"],
    "tagger": ["lemmatizer", "parser", "attribute_ruler", "senter"],
    "off": ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter"],
}
_VERSION_TAGS: dict[NounPhrases, str] = {"parser": "np", "tagger": "tnp", "off": "ner"}


class SpacyPhraseExtractor:
    def __init__(
        self,
        model: str = MODEL_PACKAGE,
        *,
        noun_chunks: bool = True,
        noun_phrases: NounPhrases | None = None,
        batch_size: int = 64,
    ) -> None:
        """`noun_phrases` says where noun phrases come from; without it, `noun_chunks` picks the parser's
        (True) or none (False)."""
        self._model = model
        self._phrases: NounPhrases = noun_phrases or ("parser" if noun_chunks else "off")
        self._batch_size = batch_size
        self._nlp: Language | None = None
        self._matcher: Matcher | None = None
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        return f"spacy-phrases-1:{self._model}:{_VERSION_TAGS[self._phrases]}"

    def extract(self, texts: Sequence[str]) -> list[list[Mention]]:
        nlp = self._pipeline()
        out: list[list[Mention]] = []
        for text, doc in zip(texts, nlp.pipe(texts, batch_size=self._batch_size), strict=True):
            found = [Mention(e.text, MentionKind.ENTITY) for e in doc.ents if e.label_ in _NAME_LABELS]
            found += [Mention(p, MentionKind.PHRASE) for p in self._noun_phrases(doc)]
            out.append(found + link_mentions(text))
        return out

    def _noun_phrases(self, doc: Doc) -> list[str]:
        if self._phrases == "parser":
            out: list[str] = []
            for chunk in doc.noun_chunks:
                # The chunk without its determiners and pronouns: "the new Atlas pipeline" -> "new Atlas pipeline".
                words = [t for t in chunk if t.pos_ not in ("DET", "PRON") and t.lower_ not in PRONOUNS]
                if words:
                    out.append(" ".join(t.text for t in words))
            return out
        if self._matcher is None:
            return []
        spans = sorted(self._matcher(doc, as_spans=True), key=lambda s: s.start)
        return [s.text for s in spans if not all(t.lower_ in PRONOUNS for t in s)]

    def _pipeline(self) -> Language:
        with self._lock:
            if self._nlp is None:
                nlp = spacy.load(self._model, exclude=_EXCLUDED[self._phrases])
                if self._phrases == "tagger":
                    matcher = Matcher(nlp.vocab)
                    matcher.add("NP", [_NP_PATTERN], greedy="LONGEST")
                    self._matcher = matcher
                self._nlp = nlp
            return self._nlp
