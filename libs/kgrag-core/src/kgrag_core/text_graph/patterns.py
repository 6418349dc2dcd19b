"""A model-free phrase extractor: capitalised runs, wikilinks and hyperlinks.

The spaCy extractor (kgrag_adapters.spacy_ner.phrases) adds NER and noun chunks; this one serves tests and
any process without the model, and supplies the link targets to both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgrag_core.text_graph.model import Mention, MentionKind
from kgrag_core.text_graph.phrases import normalise_phrase

_WIKILINK = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")
_MD_LINK = re.compile(r"\[([^\]]+)\]\((?:[^)\s]+)\)")
_URL = re.compile(r"https?://\S+")
_URL_PATH = re.compile(r"https?://[^\s/]+/(?:wiki/)?([\w%-]+)")
# A capitalised run of words, allowing inner connectors ("Bank of England"); a sentence's first word alone
# is not a name. Words are joined by spaces only: a title line and the paragraph under it are two runs.
_NAME = re.compile(r"(?<![\w'])([A-ZÀ-Þ][\w&'-]*(?:[ \t]+(?:(?:of|de|van|von|the|and|&)[ \t]+)?[A-ZÀ-Þ][\w&'-]*)*)")


def link_mentions(text: str) -> list[Mention]:
    out = [Mention(m.group(1).strip(), MentionKind.LINK) for m in _WIKILINK.finditer(text)]
    out += [Mention(m.group(1).strip(), MentionKind.LINK) for m in _MD_LINK.finditer(text)]
    out += [Mention(m.group(1).replace("_", " "), MentionKind.LINK) for m in _URL_PATH.finditer(text)]
    return out


def capitalised_runs(text: str) -> list[Mention]:
    """Capitalised runs outside links; at a sentence's start the first word may be capitalised only by
    position ("Yesterday Kestrel Pharma"), so the run is also offered without it."""
    plain = _URL.sub(" ", text)
    out: list[Mention] = []
    for match in _NAME.finditer(plain):
        name = match.group(1).strip()
        before = plain[: match.start(1)].rstrip()
        if not before or before[-1] in ".!?:\n#*-":
            rest = name.partition(" ")[2]
            if rest:
                out.append(Mention(name, MentionKind.ENTITY))
                out.append(Mention(rest.strip(), MentionKind.ENTITY))
            continue
        out.append(Mention(name, MentionKind.ENTITY))
    return out


class PatternPhraseExtractor:
    """Names by capitalisation plus link targets; deterministic and model-free."""

    @property
    def version(self) -> str:
        return "patterns-1"

    def extract(self, texts: Sequence[str]) -> list[list[Mention]]:
        return [capitalised_runs(t) + link_mentions(t) for t in texts]


def name_phrases(text: str, longest: int = 6) -> set[str]:
    """The node forms of every name in the text and of each name's inner runs ("Kestrel Pharma EDI" also
    gives "kestrel pharma"): the candidates for the names a passage adds (bridges), without NER."""
    out: set[str] = set()
    for mention in capitalised_runs(text) + link_mentions(text):
        words = mention.text.split()
        for start in range(len(words)):
            for end in range(start + 1, min(start + longest, len(words)) + 1):
                phrase = normalise_phrase(" ".join(words[start:end]), max_words=longest)
                if phrase is not None:
                    out.add(phrase)
    return out
