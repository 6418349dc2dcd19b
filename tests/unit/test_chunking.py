"""The structure-aware chunker: byte-exact spans, structure, breadcrumbs, splitting and overlap."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from kgrag_core.chunking import chunk_document, estimate_tokens, front_matter_span
from kgrag_core.documents import ChunkSpan


def texts(doc: str, spans: list[ChunkSpan]) -> list[str]:
    data = doc.encode("utf-8")
    return [data[s.start_byte : s.end_byte].decode("utf-8") for s in spans]


def check_invariants(doc: str, spans: list[ChunkSpan], *, max_tokens: int | None = None) -> list[str]:
    """The contract every chunking must meet; returns the chunk texts."""
    data = doc.encode("utf-8")
    out = []
    previous_start = -1
    for seq, span in enumerate(spans):
        assert span.seq == seq
        assert 0 <= span.start_byte < span.end_byte <= len(data)
        piece = data[span.start_byte : span.end_byte].decode("utf-8")  # raises if a character was cut
        assert piece == piece.strip()
        assert piece
        assert span.start_byte >= previous_start
        previous_start = span.start_byte
        assert span.kind in {"paragraph", "list", "code", "table", "heading", "mixed"}
        if max_tokens is not None:
            assert estimate_tokens(piece) <= max_tokens, piece
        out.append(piece)
    return out


# --- byte exactness ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc",
    [
        "# Title\n\nPlain ASCII paragraph.\n\nAnother one.\n",
        "# Café\n\nCrème brûlée à la carte — déjà vu.\n\n## 中文标题\n\n这是中文段落。第二句话。\n",
        "# Emoji 👩‍💻\n\nWorking 👩‍💻 on 🇫🇷 flags and 👍🏽 tones.\n",
        "# Combining\n\nCafe\u0301 and n\u0303 and a\u030a\u0301 stacked marks.\n",
        "# CRLF\r\n\r\nFirst paragraph\r\nwraps here.\r\n\r\n- item\r\n- item two\r\n",
        "# Lone CR\r\rParagraph one\rcontinues.\r\rParagraph two.\r",
        "#\tNot a heading\n\n\tTabbed\tparagraph\twith tabs.\n\n```\n\tcode\twith tabs\n```\n",
        "\ufeff# BOM title\n\nBody after a byte order mark.\n",
        "   leading spaces\n\n\n\n  trailing spaces   \n\n\u00a0\u3000 unicode spaces \u3000\n",
    ],
)
def test_spans_are_byte_exact(doc: str) -> None:
    spans = chunk_document(doc, title="Doc")
    pieces = check_invariants(doc, spans)
    assert pieces
    # Every word of the document ends up in some chunk.
    joined = " ".join(pieces)
    for word in doc.replace("\ufeff", "").split():
        assert word in joined


def test_unicode_offsets_are_bytes_not_characters() -> None:
    doc = "# Été\n\nÉté 中文 👩‍💻 fin.\n"
    (span,) = chunk_document(doc, title="x")
    assert span.start_byte == 0
    assert span.end_byte == len(doc.rstrip("\n").encode("utf-8"))
    assert span.end_byte > len(doc.rstrip("\n"))


def test_small_cap_never_cuts_characters_or_grapheme_clusters() -> None:
    doc = "中文句子没有空格" * 20 + "👩‍💻👍🏽🇫🇷e\u0301" * 10
    spans = chunk_document(doc, title="t", max_tokens=7, overlap_tokens=2)
    pieces = check_invariants(doc, spans, max_tokens=7)
    assert len(pieces) > 10
    for piece in pieces:
        assert not piece.startswith(("\u200d", "\u0301", "\U0001f3fd"))
        assert not piece.endswith("\u200d")


# --- structure -----------------------------------------------------------------------------------

DOC = """---
title: Atlas
acl:
  groups: [eng]
---
# Atlas

Intro paragraph about Atlas.

## Setup

Install it.

```python
def f():
    # not a heading
    return 1
```

### Details

| a | b |
|---|---|
| 1 | 2 |

## Usage

- one
- two
  continued
  - nested

# Appendix

Closing words.
"""


def test_front_matter_is_excluded() -> None:
    pieces = check_invariants(DOC, chunk_document(DOC, title="Atlas"))
    assert not any("acl:" in p or "groups" in p for p in pieces)
    assert pieces[0].startswith("# Atlas")
    span = front_matter_span(DOC.encode())
    assert span is not None
    assert DOC.encode()[span[0] : span[1]].decode() == "title: Atlas\nacl:\n  groups: [eng]"


def test_a_leading_rule_in_plain_text_is_not_front_matter() -> None:
    doc = "---\nJust a rule, then prose.\n---\nMore prose.\n"
    assert front_matter_span(doc.encode()) is None
    assert "Just a rule" in " ".join(texts(doc, chunk_document(doc, title="t")))


def test_headings_bound_chunks_and_breadcrumbs_follow_the_outline() -> None:
    spans = chunk_document(DOC, title="Atlas")
    pieces = check_invariants(DOC, spans)
    crumbs = [s.breadcrumb for s in spans]
    assert crumbs == [
        ("Atlas",),  # "# Atlas" equals the title: not repeated
        ("Atlas", "Setup"),
        ("Atlas", "Setup", "Details"),
        ("Atlas", "Usage"),  # H2 after H3 drops the H3
        ("Atlas", "Appendix"),  # a later H1 replaces the hidden title heading
    ]
    for piece in pieces:
        assert sum(line.startswith("#") and not line.startswith("# not") for line in piece.splitlines()) <= 1
        assert piece.startswith("#")  # the heading opens its section's first chunk
    assert [s.kind for s in spans] == ["paragraph", "mixed", "table", "list", "paragraph"]


def test_heading_that_differs_from_title_is_kept_and_deeper_levels_reset() -> None:
    doc = "# Guide\n\nA.\n\n### Deep\n\nB.\n\n## Mid\n\nC.\n\n#### Deeper\n\nD.\n\n# Other\n\nE.\n"
    spans = chunk_document(doc, title="Handbook")
    assert [s.breadcrumb for s in spans] == [
        ("Handbook", "Guide"),
        ("Handbook", "Guide", "Deep"),
        ("Handbook", "Guide", "Mid"),
        ("Handbook", "Guide", "Mid", "Deeper"),
        ("Handbook", "Other"),
    ]


def test_setext_headings_and_closing_hashes() -> None:
    doc = "Big Title\n=========\n\nText.\n\nSub ##\n---\n\n## Closed ##\n\nMore.\n"
    spans = chunk_document(doc, title="x")
    assert [s.breadcrumb for s in spans] == [
        ("x", "Big Title"),
        ("x", "Big Title", "Sub ##"),
        ("x", "Big Title", "Closed"),
    ]


def test_heading_only_sections_yield_small_heading_chunks() -> None:
    doc = "# One\n\n## Empty\n\n## Full\n\nBody.\n\n## Trailing\n"
    spans = chunk_document(doc, title="t")
    pieces = check_invariants(doc, spans)
    assert pieces == ["# One", "## Empty", "## Full\n\nBody.", "## Trailing"]
    assert [s.kind for s in spans] == ["heading", "heading", "paragraph", "heading"]


def test_empty_and_whitespace_documents_have_no_chunks() -> None:
    for doc in ["", "   \n\t\n", "\r\n\r\n", "---\ntitle: x\n---\n", "\ufeff", "***\n\n---\n"]:
        assert chunk_document(doc, title="t") == []


def test_code_fence_and_table_stay_whole_when_they_fit() -> None:
    code = "```\n" + "\n".join(f"line_{i} = {i}" for i in range(20)) + "\n\n# comment\n```"
    table = "| k | v |\n|---|---|\n" + "\n".join(f"| key{i} | value {i} |" for i in range(12))
    doc = f"# T\n\nIntro.\n\n{code}\n\n{table}\n\n~~~\nunclosed tilde fence\n# inside"
    spans = chunk_document(doc, title="T", max_tokens=120)
    pieces = check_invariants(doc, spans, max_tokens=120)
    assert sum(code in p for p in pieces) == 1  # whole, in one chunk
    assert sum(table in p for p in pieces) == 1
    assert pieces[-1].endswith("~~~\nunclosed tilde fence\n# inside")  # the fence runs to the end
    assert len(pieces) > 1  # it does not all fit in one chunk


def test_oversized_code_and_table_split_on_line_boundaries() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = compute({i}, {i + 1})" for i in range(60)) + "\n```"
    table = "| k | v |\n|---|---|\n" + "\n".join(f"| key {i} | some value {i} |" for i in range(60))
    for block, kind in [(code, "code"), (table, "table")]:
        doc = f"## Section\n\n{block}\n"
        spans = chunk_document(doc, title="t", max_tokens=60, overlap_tokens=8)
        pieces = check_invariants(doc, spans, max_tokens=60)
        assert len(pieces) > 2
        assert {s.kind for s in spans} == {kind}
        lines = set(doc.splitlines())
        for piece in pieces:
            assert all(line in lines for line in piece.splitlines()), piece
        if kind == "table":  # rows are never repeated
            assert sum(len(p.splitlines()) for p in pieces) == len(doc.strip().splitlines())


def test_oversized_paragraph_splits_at_sentences_with_overlap() -> None:
    sentences = [f"Sentence {i} talks about topic {i} in some words." for i in range(40)]
    doc = "# Notes\n\n" + " ".join(sentences) + "\n"
    spans = chunk_document(doc, title="t", max_tokens=50, overlap_tokens=12)
    pieces = check_invariants(doc, spans, max_tokens=50)
    assert len(pieces) >= 5
    assert pieces[0].startswith("# Notes\n\nSentence 0")  # the heading joins the first piece
    for before, after in pairwise(spans):
        assert after.start_byte < before.end_byte  # consecutive pieces of one block overlap
    for piece in pieces[:-1]:
        assert piece.endswith(".")  # ...and end at sentence boundaries
    data = doc.encode()
    overlap = data[spans[2].start_byte : spans[1].end_byte].decode()
    assert 4 <= estimate_tokens(overlap) <= 12


def test_long_words_split_only_when_unavoidable() -> None:
    doc = "word " * 30 + "x" * 400 + " tail"
    spans = chunk_document(doc, title="t", max_tokens=20, overlap_tokens=0)
    pieces = check_invariants(doc, spans, max_tokens=20)
    assert "".join(p for p in pieces if set(p) == {"x"}) == "x" * 400 or "x" * 400 in "".join(pieces)
    assert pieces[-1].endswith("tail")


def test_no_overlap_between_different_blocks() -> None:
    paragraphs = [" ".join(f"p{i}w{j}" for j in range(30)) for i in range(6)]
    doc = "\n\n".join(paragraphs)
    spans = chunk_document(doc, title="t", max_tokens=70, overlap_tokens=10)
    check_invariants(doc, spans, max_tokens=70)
    for before, after in pairwise(spans):
        assert after.start_byte >= before.end_byte


def test_lists_and_quotes_are_blocks() -> None:
    doc = "Intro line.\n- a\n- b\n    - nested\n  lazy continuation\n\n  indented after blank\n\n> quoted\nlazy\n\nend"
    spans = chunk_document(doc, title="t", max_tokens=4, overlap_tokens=0)
    pieces = check_invariants(doc, spans)
    assert pieces[0] == "Intro line."
    assert "- a\n- b\n    - nested\n  lazy continuation\n\n  indented after blank".startswith(pieces[1])
    assert pieces[-1] == "> quoted\nlazy\n\nend"  # quote + lazy line, packed with the last paragraph
    assert spans[-1].kind == "paragraph"


def test_plain_text_paragraphs() -> None:
    doc = "First paragraph line one\nline two.\n\nSecond paragraph.\n\n\n\nThird.\n"
    spans = chunk_document(doc, title="t", max_tokens=8, overlap_tokens=0)
    assert texts(doc, spans) == ["First paragraph line one\nline two.", "Second paragraph.\n\n\n\nThird."]
    assert all(s.breadcrumb == ("t",) for s in spans)
    assert chunk_document(doc, title="")[0].breadcrumb == ()


def test_greedy_packing_within_a_section() -> None:
    doc = "# S\n\n" + "\n\n".join(f"Short paragraph number {i}." for i in range(10))
    spans = chunk_document(doc, title="t", max_tokens=40)
    pieces = check_invariants(doc, spans, max_tokens=40)
    assert 2 <= len(pieces) <= 4
    assert "".join(pieces).count("Short paragraph") == 10


def test_real_tokenizer_callback_is_respected() -> None:
    def count_chars(text: str) -> int:  # deliberately not additive over words
        return len(text)

    doc = "# Head\n\n" + "lorem ipsum dolor sit amet " * 40
    spans = chunk_document(doc, title="t", max_tokens=80, overlap_tokens=10, count_tokens=count_chars)
    for piece in check_invariants(doc, spans):
        assert len(piece) <= 80


def test_deterministic() -> None:
    assert chunk_document(DOC, title="Atlas") == chunk_document(DOC, title="Atlas")


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_document("x", title="t", max_tokens=0)
    with pytest.raises(ValueError, match="overlap_tokens"):
        chunk_document("x", title="t", max_tokens=10, overlap_tokens=10)


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("the cat sat") == 3
    assert estimate_tokens("Hello, world!") == 4
    assert estimate_tokens("中文") == 2
    assert estimate_tokens("cafe\u0301") == 1
    assert estimate_tokens("internationalization") == 3
    prose = "The quick brown fox jumps over the lazy dog, then keeps on running through the forest."
    assert 15 <= estimate_tokens(prose) <= 22
    # Subadditive: the splitter relies on summed parts bounding the whole.
    rng = random.Random(7)
    for _ in range(200):
        a, b = random_text(rng, 10), random_text(rng, 10)
        assert estimate_tokens(a + b) <= estimate_tokens(a) + estimate_tokens(b)


# --- property-style: many random documents -------------------------------------------------------

_WORDS = [
    "alpha",
    "beta",
    "Gamma",
    "δέλτα",
    "中文",
    "句子。",
    "emoji👩‍💻",
    "e\u0301te\u0301",
    "x" * 40,
    "end.",
    "why?",
    "(paren)",
    "tab\tbed",
    "über",
    "🇫🇷",
    "a_b",
    "1.5",
    "—",
    "word",
]
_BREAKS = ["\n", "\r\n", "\r"]


def random_text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, words)))


def random_document(rng: random.Random) -> str:
    nl = rng.choice(_BREAKS)
    parts: list[str] = []
    if rng.random() < 0.2:
        parts.append(f"---{nl}title: x{nl}---")
    for _ in range(rng.randint(0, 12)):
        kind = rng.randrange(8)
        if kind == 0:
            parts.append("#" * rng.randint(1, 6) + " " + random_text(rng, 4))
        elif kind == 1:
            fence = rng.choice(["```", "~~~"])
            body = nl.join(random_text(rng, 8) for _ in range(rng.randint(0, 15)))
            parts.append(f"{fence}py{nl}{body}{nl}{fence}")
        elif kind == 2:
            parts.append(
                nl.join(
                    "| " + random_text(rng, 3) + " | " + random_text(rng, 3) + " |" for _ in range(rng.randint(1, 20))
                )
            )
        elif kind == 3:
            parts.append(
                nl.join(
                    rng.choice(["- ", "  - ", "1. ", "* "]) + random_text(rng, 10) for _ in range(rng.randint(1, 10))
                )
            )
        elif kind == 4:
            parts.append("> " + random_text(rng, 30))
        elif kind == 5:
            parts.append(rng.choice(["", " ", "\t", "\u3000"]))
        else:
            parts.append(nl.join(random_text(rng, 60) for _ in range(rng.randint(1, 4))))
    return (nl * rng.randint(1, 3)).join(parts) + rng.choice(["", nl, " "])


def test_random_documents_keep_the_span_invariant() -> None:
    rng = random.Random(20240501)
    for _ in range(400):
        doc = random_document(rng)
        max_tokens = rng.choice([5, 12, 40, 200])
        overlap = rng.choice([0, 2, max_tokens // 3])
        spans = chunk_document(
            doc, title=rng.choice(["", "Doc", "alpha"]), max_tokens=max_tokens, overlap_tokens=overlap
        )
        pieces = check_invariants(doc, spans)
        for piece in pieces:
            # Only a single grapheme cluster may exceed the cap (e.g. a flag counted as two symbols).
            assert estimate_tokens(piece) <= max_tokens or len(piece) <= 4, (piece, max_tokens)
        assert chunk_document(doc, title="Doc", max_tokens=max_tokens, overlap_tokens=overlap) == chunk_document(
            doc, title="Doc", max_tokens=max_tokens, overlap_tokens=overlap
        )
