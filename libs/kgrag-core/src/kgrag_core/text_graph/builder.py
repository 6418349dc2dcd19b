"""Building a document's part of the text graph from its passages: nodes, weighted edges, title links."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from kgrag_core.ports import Embedder
from kgrag_core.text_graph.model import MentionEdge, MentionKind, Passage, SynonymEdge, TextGraphSettings
from kgrag_core.text_graph.phrases import NAME_KINDS, node_phrases, normal_words, normalise_phrase, phrase_of
from kgrag_core.text_graph.ports import NewName, PhraseExtractor, TextGraphStore

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_TITLE_WORDS = 6


@dataclass(frozen=True, slots=True)
class BuildReport:
    doc_id: str
    passages: int
    edges: int
    new_nodes: int
    synonyms: int = 0


def word_ngrams(text: str, longest: int = _TITLE_WORDS) -> set[str]:
    """Every run of 1..`longest` words, normalised as nodes are: the candidates a title could be."""
    # Each word is normalised once, not once per run it is in (this ran for every passage at ingest).
    words = [normal_words(w) for w in _WORD.findall(unicodedata.normalize("NFKC", text).casefold())]
    out: set[str] = set()
    for start in range(len(words)):
        run: list[str] = []
        for end in range(start + 1, min(start + longest, len(words)) + 1):
            run += words[end - 1]
            phrase = phrase_of(run, max_words=longest)
            if phrase is not None:
                out.add(phrase)
    return out


class TextGraphBuilder:
    def __init__(
        self,
        store: TextGraphStore,
        extractor: PhraseExtractor,
        settings: TextGraphSettings | None = None,
        *,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.extractor = extractor
        self.settings = settings or TextGraphSettings()
        self.embedder = embedder  # None: synonyms by normal form only

    def build(self, doc_id: str, title: str, passages: Sequence[Passage]) -> BuildReport:
        """The document's edges, replacing whatever it had: every passage links to the nodes it names, to
        its document's title, and to any other document's title it names (a title/link edge)."""
        return self.build_many([(doc_id, title, passages)])[0]

    def build_many(self, documents: Sequence[tuple[str, str, Sequence[Passage]]]) -> list[BuildReport]:
        """`build` for each (doc_id, title, passages), in order, as if one after the other (a document names
        the titles of those before it), with one extraction pass, one key and one title lookup and one
        embedding call for the whole batch, and all its documents' edges replaced in one transaction: per
        document, those calls and commits were most of the ingest cost."""
        cfg = self.settings
        found = iter(self.extractor.extract([p.text for _, _, passages in documents for p in passages]))
        prepared: list[tuple[str | None, list[dict[str, MentionKind]], list[set[str]]]] = []
        for _, title, passages in documents:
            own_title = normalise_phrase(title, max_words=cfg.max_phrase_words) if title else None
            per_passage: list[dict[str, MentionKind]] = []
            for _ in passages:
                named = node_phrases(next(found), max_words=cfg.max_phrase_words, min_chars=cfg.min_phrase_chars)
                if own_title is not None:
                    named[own_title] = MentionKind.TITLE
                per_passage.append(named)
            prepared.append((own_title, per_passage, [word_ngrams(p.text) for p in passages]))
        wanted: set[str] = set()
        for _, per_passage, grams in prepared:
            wanted.update(*per_passage, *grams)
        keys = self.store.node_keys(sorted(wanted))
        titled = self.store.titled(sorted({keys[g] for _, _, grams in prepared for found in grams for g in found}))
        replaced: list[tuple[str, Sequence[MentionEdge], Sequence[str]]] = []
        for (doc_id, _, passages), (own_title, per_passage, grams) in zip(documents, prepared, strict=True):
            edges: list[MentionEdge] = []
            for passage, named, passage_grams in zip(passages, per_passage, grams, strict=True):
                for gram in sorted(passage_grams):
                    if keys[gram] in titled and gram not in named:
                        named[gram] = MentionKind.TITLE
                for phrase, kind in sorted(named.items()):
                    weight = cfg.phrase_weight if kind is MentionKind.PHRASE else 1.0
                    edges.append(
                        MentionEdge(passage.chunk_id, doc_id, passage.acl_class_id, keys[phrase], kind, weight)
                    )
            own = [keys[own_title]] if own_title is not None and own_title in keys else []
            replaced.append((doc_id, edges, own))
            titled.update(own)  # the documents after this one name its title, as if built one by one
        news = self.store.replace_documents(replaced)
        built: list[tuple[str, int, list[str], Sequence[MentionEdge]]] = [
            (entry[0], len(doc[2]), new, entry[1]) for doc, entry, new in zip(documents, replaced, news, strict=True)
        ]
        synonyms = self._synonyms([(set(new), edges) for _, _, new, edges in built], {k: p for p, k in keys.items()})
        return [
            BuildReport(doc_id, passages, len(edges), len(new), synonyms.get(doc_id, 0))
            for doc_id, passages, new, edges in built
        ]

    def _synonyms(
        self, documents: Sequence[tuple[set[str], Sequence[MentionEdge]]], phrase_of: dict[str, str]
    ) -> dict[str, int]:
        """Synonym edges for the names first seen in these documents (synonym edges per document): each new
        name is embedded once, now (a name is new only once, so a re-ingest or a later batch embeds nothing
        for it again), all of a batch's in one call."""
        if self.embedder is None:
            return {}
        first: dict[str, MentionEdge] = {}
        ordered: list[str] = []
        for new, edges in documents:
            mine: dict[str, MentionEdge] = {}
            for edge in edges:
                if edge.node_key in new and edge.kind in NAME_KINDS and edge.node_key not in mine:
                    mine[edge.node_key] = edge
            first.update(mine)
            ordered += sorted(mine)
        if not ordered:
            return {}
        vectors = self.embedder.embed_documents([phrase_of[k] for k in ordered])
        names = [
            NewName(k, tuple(phrase_of[k].split()), tuple(v), first[k].chunk_id, first[k].doc_id)
            for k, v in zip(ordered, vectors, strict=True)
        ]
        pairs = self.store.similar_names(names, self.settings.synonym_threshold)
        self.store.add_synonyms(
            [SynonymEdge(a, b, first[a].chunk_id, first[a].acl_class_id, round(sim, 4)) for a, b, sim in pairs]
        )
        made: dict[str, int] = {}
        for a, _, _ in pairs:
            made[first[a].doc_id] = made.get(first[a].doc_id, 0) + 1
        return made
