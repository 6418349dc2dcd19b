"""Building a document's part of the text graph from its passages: nodes, weighted edges, title links."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from kgrag_core.text_graph.model import MentionEdge, MentionKind, Passage, TextGraphSettings
from kgrag_core.text_graph.phrases import node_phrases, normalise_phrase
from kgrag_core.text_graph.ports import PhraseExtractor, TextGraphStore

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_TITLE_WORDS = 6


@dataclass(frozen=True, slots=True)
class BuildReport:
    doc_id: str
    passages: int
    edges: int
    new_nodes: int


def word_ngrams(text: str, longest: int = _TITLE_WORDS) -> set[str]:
    """Every run of 1..`longest` words, normalised as nodes are: the candidates a title could be."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    out: set[str] = set()
    for start in range(len(words)):
        for end in range(start + 1, min(start + longest, len(words)) + 1):
            phrase = normalise_phrase(" ".join(words[start:end]), max_words=longest)
            if phrase is not None:
                out.add(phrase)
    return out


class TextGraphBuilder:
    def __init__(self, store: TextGraphStore, extractor: PhraseExtractor, settings: TextGraphSettings | None = None):
        self.store = store
        self.extractor = extractor
        self.settings = settings or TextGraphSettings()

    def build(self, doc_id: str, title: str, passages: Sequence[Passage]) -> BuildReport:
        """The document's edges, replacing whatever it had: every passage links to the nodes it names, to
        its document's title, and to any other document's title it names (a title/link edge)."""
        cfg = self.settings
        found = self.extractor.extract([p.text for p in passages])
        own_title = normalise_phrase(title, max_words=cfg.max_phrase_words) if title else None
        per_passage: list[dict[str, MentionKind]] = []
        grams = [word_ngrams(p.text) for p in passages]
        for mentions in found:
            named = node_phrases(mentions, max_words=cfg.max_phrase_words, min_chars=cfg.min_phrase_chars)
            if own_title is not None:
                named[own_title] = MentionKind.TITLE
            per_passage.append(named)
        wanted = set().union(*per_passage, *grams)
        keys = self.store.node_keys(sorted(wanted))
        titled = self.store.titled(sorted({keys[g] for found_grams in grams for g in found_grams}))
        edges: list[MentionEdge] = []
        for passage, named, passage_grams in zip(passages, per_passage, grams, strict=True):
            for gram in sorted(passage_grams):
                if keys[gram] in titled and gram not in named:
                    named[gram] = MentionKind.TITLE
            for phrase, kind in sorted(named.items()):
                weight = cfg.phrase_weight if kind is MentionKind.PHRASE else 1.0
                edges.append(MentionEdge(passage.chunk_id, doc_id, passage.acl_class_id, keys[phrase], kind, weight))
        own = [keys[own_title]] if own_title is not None and own_title in keys else []
        new = self.store.replace_document(doc_id, edges, titled=own)
        return BuildReport(doc_id, len(passages), len(edges), len(new))
