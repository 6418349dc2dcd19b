"""The text graph's phrase extractor: spaCy's NER and noun chunks from the shipped small model, plus links.

Noun chunks need the tagger and the parser, which tier 2's recognizer leaves out; this pipeline loads them
(once per instance, lazily). Without noun chunks (`noun_chunks=False`) only the NER runs, at tier 2's cost.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import spacy
from spacy.language import Language

from kgrag_adapters.spacy_ner.recognizer import MODEL_PACKAGE, PRONOUNS
from kgrag_core.text_graph.model import Mention, MentionKind
from kgrag_core.text_graph.patterns import link_mentions

# Entity labels that name things; dates, amounts and ordinals connect passages by coincidence.
_NAME_LABELS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "NORP", "LANGUAGE"}
)


class SpacyPhraseExtractor:
    def __init__(self, model: str = MODEL_PACKAGE, *, noun_chunks: bool = True, batch_size: int = 64) -> None:
        self._model = model
        self._noun_chunks = noun_chunks
        self._batch_size = batch_size
        self._nlp: Language | None = None
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        return f"spacy-phrases-1:{self._model}:{'np' if self._noun_chunks else 'ner'}"

    def extract(self, texts: Sequence[str]) -> list[list[Mention]]:
        nlp = self._pipeline()
        out: list[list[Mention]] = []
        for text, doc in zip(texts, nlp.pipe(texts, batch_size=self._batch_size), strict=True):
            found = [Mention(e.text, MentionKind.ENTITY) for e in doc.ents if e.label_ in _NAME_LABELS]
            if self._noun_chunks:
                for chunk in doc.noun_chunks:
                    # The chunk without its determiners and pronouns: "the new Atlas pipeline" -> "new Atlas pipeline".
                    words = [t for t in chunk if t.pos_ not in ("DET", "PRON") and t.lower_ not in PRONOUNS]
                    if words:
                        found.append(Mention(" ".join(t.text for t in words), MentionKind.PHRASE))
            out.append(found + link_mentions(text))
        return out

    def _pipeline(self) -> Language:
        with self._lock:
            if self._nlp is None:
                exclude = (
                    ["lemmatizer"]
                    if self._noun_chunks
                    else ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer"]
                )
                self._nlp = spacy.load(self._model, exclude=exclude)
            return self._nlp
