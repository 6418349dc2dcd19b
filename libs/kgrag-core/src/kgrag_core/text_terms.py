"""A small, deterministic English term analyser for sentence scoring and eval (not the BM25 index's)."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves tell show give list describe explain please""".split()
)


def light_stem(word: str) -> str:
    """Strip common English suffixes so 'indexes', 'indexed' and 'indexing' meet; cheap on purpose."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_terms(text: str) -> list[str]:
    """Lower-cased, stemmed words without stopwords, in order of appearance."""
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group(0).replace("’", "'")
        if word in STOPWORDS or len(word) < 2 and not word.isdigit():
            continue
        out.append(light_stem(word))
    return out
