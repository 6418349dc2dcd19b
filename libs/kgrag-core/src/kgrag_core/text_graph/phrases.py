"""Phrases as nodes: the normal form two mentions share when they name the same thing, and what is no node.

The normal form is deliberately loose ("The Acme Corp." and "acme corp" are one node) because near-identical
names are the synonyms the builder can find without a model; a year, a number or a stopword is never a node.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from kgrag_core.text_graph.model import Mention, MentionKind
from kgrag_core.text_terms import STOPWORDS

_LEADING = frozenset({"the", "a", "an", "this", "that", "these", "those", "its", "their", "our", "his", "her"})
_SUFFIXES = frozenset({"inc", "ltd", "llc", "plc", "gmbh", "corp", "co", "ag", "sa"})
_EDGE = re.compile(r"^[\W_]+|[\W_]+$", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s$")
_NUMERIC = re.compile(r"^[\d\s.,:/%$€£-]+$")

# Kinds a second hop may start from: names, not common noun phrases.
NAME_KINDS = frozenset({MentionKind.ENTITY, MentionKind.TITLE, MentionKind.LINK})


def normalise_phrase(text: str, *, max_words: int = 6, min_chars: int = 3) -> str | None:
    """The node a mention belongs to, or None when it should connect nothing (numbers, stopwords)."""
    return phrase_of(normal_words(text), max_words=max_words, min_chars=min_chars)


def normal_words(text: str) -> list[str]:
    """The words of `text` as the normal form keeps them: folded, edge punctuation and possessives gone. A
    phrase's normal words are its words' normal words in order, so a run of words is normalised once."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    # "Kestrel's" is Kestrel; "O'Neill" and "ONeill" are one name.
    words = [_POSSESSIVE.sub("", _EDGE.sub("", w)).replace("'", "").replace("’", "") for w in folded.split()]
    return [w for w in words if w]


def phrase_of(words: Sequence[str], *, max_words: int = 6, min_chars: int = 3) -> str | None:
    """The node of these normal words (see `normalise_phrase`)."""
    start, end = 0, len(words)
    while start < end and words[start] in _LEADING:
        start += 1
    while end - start > 1 and words[end - 1] in _SUFFIXES:
        end -= 1
    if start == end or end - start > max_words:
        return None
    kept = words[start:end]
    phrase = " ".join(kept)
    if len(phrase) < min_chars or _NUMERIC.match(phrase) or all(w in STOPWORDS for w in kept):
        return None
    return phrase


def node_phrases(mentions: Iterable[Mention], *, max_words: int = 6, min_chars: int = 3) -> dict[str, MentionKind]:
    """Each distinct node of a passage's mentions, with the most specific kind that named it."""
    order = {MentionKind.LINK: 0, MentionKind.TITLE: 1, MentionKind.ENTITY: 2, MentionKind.PHRASE: 3}
    out: dict[str, MentionKind] = {}
    for mention in mentions:
        phrase = normalise_phrase(mention.text, max_words=max_words, min_chars=min_chars)
        if phrase is None:
            continue
        known = out.get(phrase)
        if known is None or order[mention.kind] < order[known]:
            out[phrase] = mention.kind
    return out
