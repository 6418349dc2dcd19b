"""Splitting one oversized block into pieces of at most `max_tokens`, with overlap.

A block is cut into *units* (lines, sentences, words, and as a last resort grapheme clusters). Each unit
records the strength of the boundary after it. A piece is packed greedily from units and then cut at the
strongest boundary that still leaves the piece reasonably full, so prose breaks at sentence ends and
code at line ends whenever it can. Offsets stay UTF-8 byte offsets throughout: char positions found in
a decoded unit are turned into bytes by encoding the text before them, never by searching.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise

# Boundary strengths, weakest first.
CHAR = 0
WORD = 1
SENTENCE = 2
LINE = 3  # a line of code, a table row, a list item, a heading

Counter = Callable[[str], int]
Measure = Callable[[int, int], int]  # tokens in data[start:end]

_SPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"[.!?…。！？][\"'”’»)\]」』）]*$")
# CJK sentences are not followed by a space, so their stops are boundaries of their own.
_CJK_STOP = re.compile(r"[。！？][」』）\"”’]*(?=\S)")
# A grapheme-cluster approximation: never cut before a combining mark, variation selector or skin-tone
# modifier, never cut either side of a zero-width joiner, keep flag pairs and CRLF together.
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\ufe00-\ufe0f\U0001f3fb-\U0001f3ff"
_CLUSTER = re.compile(rf"(?:\r\n|[\U0001f1e6-\U0001f1ff]{{2}}|.)(?:[{_MARKS}]|\u200d.?)*", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Unit:
    start: int
    end: int
    tokens: int
    strength: int  # of the boundary right after this unit


def segment_units(data: bytes, start: int, end: int, strength: int, *, max_tokens: int, count: Counter) -> list[Unit]:
    """Units for data[start:end]: the whole segment if it fits, else sentences/words/clusters."""
    text = data[start:end].decode("utf-8")
    tokens = count(text)
    if tokens <= max_tokens:
        return [Unit(start, end, tokens, strength)]
    breaks: dict[int, int] = {}
    for match in _SPACE.finditer(text):
        if match.start() > 0 and match.end() < len(text):
            before = _SENTENCE_END.search(text, max(0, match.start() - 8), match.start())
            breaks[match.end()] = SENTENCE if before else WORD
    for match in _CJK_STOP.finditer(text):
        breaks[match.end()] = SENTENCE
    units: list[Unit] = []
    position = start
    for lo, hi in pairwise([0, *sorted(breaks), len(text)]):
        part = text[lo:hi]
        size = len(part.encode("utf-8"))
        part_strength = breaks.get(hi, strength)
        part_tokens = count(part)
        if part_tokens <= max_tokens:
            units.append(Unit(position, position + size, part_tokens, part_strength))
        else:
            units.extend(_cluster_units(part, position, part_strength, count, max_tokens))
        position += size
    return units


def _cluster_units(text: str, start: int, strength: int, count: Counter, max_tokens: int) -> list[Unit]:
    """Units of whole grapheme clusters, about max_tokens/16 tokens each: the fallback for a 'word'
    longer than the cap (CJK without punctuation, base64 images, minified code).

    Units this small still allow overlap; one unit per cluster would cost a count call per character
    (seconds for a 1 MB inline image).
    """
    # Every ASCII character is a cluster of its own (a CR LF pair split here is trimmed away anyway).
    bounds: Sequence[int] = range(len(text) + 1) if text.isascii() else [0, *(m.end() for m in _CLUSTER.finditer(text))]
    target = max(1, max_tokens // 16)
    units: list[Unit] = []
    position, i, last = start, 0, len(bounds) - 1
    while i < last:
        j = _longest_prefix(text, bounds, i, target, count)
        part = text[bounds[i] : bounds[j]]
        size = len(part.encode("utf-8"))
        units.append(Unit(position, position + size, count(part), CHAR))
        position, i = position + size, j
    if units:
        units[-1] = Unit(units[-1].start, units[-1].end, units[-1].tokens, strength)
    return units


def _longest_prefix(text: str, bounds: Sequence[int], i: int, target: int, count: Counter) -> int:
    """Largest j > i with count(text[bounds[i]:bounds[j]]) <= target (at least i + 1): gallop, then bisect."""
    last = len(bounds) - 1
    good, step = i + 1, 1
    bad = last + 1
    while good < last:
        probe = min(good + step, last)
        if count(text[bounds[i] : bounds[probe]]) > target:
            bad = probe
            break
        good, step = probe, step * 2
    while bad - good > 1:
        middle = (good + bad) // 2
        if count(text[bounds[i] : bounds[middle]]) <= target:
            good = middle
        else:
            bad = middle
    return good


def pack_units(
    units: list[Unit], *, max_tokens: int, overlap_tokens: int, min_fill: float, measure: Measure
) -> list[tuple[int, int]]:
    """Byte spans of the pieces. Pieces only exceed `max_tokens` when one unit alone does.

    `min_fill` (0..1) is how full a piece must be before a stronger boundary is preferred to a later one.
    Consecutive pieces share up to `overlap_tokens` of trailing units; every piece adds new text.
    """
    n = len(units)
    acc = list(accumulate((u.tokens for u in units), initial=0))
    pieces: list[tuple[int, int]] = []
    a = done = 0  # a: first unit of the piece; done: units before it are covered by earlier pieces
    while True:
        first_new = max(a, done)
        if pieces and acc[n] == acc[first_new]:
            break  # only whitespace is left; it belongs to the previous piece
        # The piece must reach past `done` by at least one unit that carries tokens.
        lo = first_new + 1
        while lo < n and acc[lo] == acc[first_new]:
            lo += 1
        hi = min(bisect_right(acc, acc[a] + max_tokens) - 1, n)
        if hi < lo:
            if a < done:  # the overlap leaves no room for the next unit: drop the overlap
                a = done
                continue
            hi = lo  # one unit above the cap on its own: it cannot be split further
        b = n if hi == n else _best_break(units, acc, a, lo, hi, min_fill * max_tokens)
        # Unit counts are summed; a real tokenizer may disagree on the joined text, so check it.
        while b > lo and measure(units[a].start, units[b - 1].end) > max_tokens:
            b -= 1
        pieces.append((units[a].start, units[b - 1].end))
        if b >= n:
            break
        done = b
        a = _overlap_start(units, a, b, overlap_tokens)
    return pieces


def _best_break(units: list[Unit], acc: list[int], a: int, lo: int, hi: int, min_fill: float) -> int:
    """End index in [lo, hi] at the strongest boundary that leaves the piece at least `min_fill` full."""
    best, best_strength = hi, -1
    for k in range(lo, hi + 1):
        if acc[k] - acc[a] >= min_fill and units[k - 1].strength >= best_strength:
            best, best_strength = k, units[k - 1].strength
    return best


def _overlap_start(units: list[Unit], a: int, b: int, overlap_tokens: int) -> int:
    """First unit of the next piece: back from `b` by at most `overlap_tokens`, after unit `a`."""
    if overlap_tokens <= 0:
        return b
    c, total = b, 0
    while c - 1 > a and total + units[c - 1].tokens <= overlap_tokens:
        c -= 1
        total += units[c].tokens
    # Prefer to start the overlap at a sentence (or stronger) boundary if that keeps at least half of it.
    kept = total
    for k in range(c, b):
        if units[k - 1].strength >= SENTENCE and kept * 2 >= overlap_tokens:
            return k
        kept -= units[k].tokens
    while c < b and units[c - 1].strength == CHAR:  # else start on a word, not mid-word
        c += 1
    return c
