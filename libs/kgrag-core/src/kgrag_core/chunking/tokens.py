"""A fast token-count estimate, used when no real tokenizer is wired in.

The estimate aims at WordPiece-style counts (BERT/MiniLM vocabularies) for English:

* a run of letters/digits counts one token per started 7 characters (most English words are one
  WordPiece token; long or rare words split into a few pieces), which averages about 1.3 per word;
* every punctuation mark or symbol is its own token (WordPiece splits them off);
* every CJK ideograph, kana or hangul syllable is its own token (WordPiece splits CJK per character);
* whitespace, combining marks, joiners and variation selectors cost nothing.

It is an estimate, not a tokenizer: real counts differ by a few percent on prose and more on code.

The estimate is *subadditive*: ``estimate_tokens(a + b) <= estimate_tokens(a) + estimate_tokens(b)``
(joining two texts can merge two words into one but never creates a token). The splitter relies on
that: the sum of the parts' counts is an upper bound for the whole, so a piece packed by summing
never exceeds the cap.
"""

from __future__ import annotations

import re

# Characters a WordPiece tokenizer drops or folds into the previous character.
_IGNORABLE = (
    "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"  # combining marks
    "\u200b-\u200f\u2060-\u2064\ufeff"  # zero-width characters, joiners, BOM
    "\ufe00-\ufe0f\U000e0100-\U000e01ef"  # variation selectors
    "\U0001f3fb-\U0001f3ff"  # emoji skin-tone modifiers
)
_CJK = (
    "\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
)
_CJK_CHAR = re.compile(f"[{_CJK}]")
# Run after CJK characters are blanked out (Python's \w matches ideographs).
_WORD = re.compile(rf"[^\W_](?:[^\W_]|[{_IGNORABLE}])*")
_SYMBOL = re.compile(rf"[^\w\s{_IGNORABLE}]|_")
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
_CHARS_PER_WORD_PIECE = 7


def estimate_tokens(text: str) -> int:
    """Estimate the number of WordPiece tokens in `text` (see the module docstring for the rules)."""
    if text.isascii():
        # Same rules, several times faster: the chunker calls this on every block and every piece.
        words = _ASCII_WORD.findall(text)
        visible = sum(map(len, text.split()))
        symbols = visible - sum(map(len, words))
        return symbols + sum((len(w) + _CHARS_PER_WORD_PIECE - 1) // _CHARS_PER_WORD_PIECE for w in words)
    text, cjk = _CJK_CHAR.subn(" ", text)
    words = _WORD.findall(text)
    return (
        cjk
        + len(_SYMBOL.findall(text))
        + sum((len(w) + _CHARS_PER_WORD_PIECE - 1) // _CHARS_PER_WORD_PIECE for w in words)
    )
