"""An extractive answer's confidence describes its quotes, not only the evidence around them: a quote that
shares one word with the question is not a MEDIUM-confidence answer (docs/getting-started.md, section 5)."""

from __future__ import annotations

from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.search import SearchHit


def _hit(i: int, title: str, text: str) -> SearchHit:
    return SearchHit(
        f"ch_{i}", f"doc-{i}", title, f"uri://{i}", "wiki", (title,), 0, len(text.encode()), text, 1.0 / (i + 1)
    )


def test_a_quote_that_shares_one_word_with_the_question_is_low_confidence() -> None:
    hits = [
        _hit(
            0, "NW-4420: Halden user cannot reset Beacon password", "Summary: Halden user cannot reset Beacon password."
        ),
        _hit(1, "Office guide", "The office in Leipzig has a kitchen. Visitors get a wifi voucher at the desk."),
    ]
    answer = extractive_answer("What is the office wifi password?", hits)
    assert answer.answered  # the evidence as a whole covers the question's words, so it still quotes…
    quoted = " ".join(s.text for s in answer.sentences)
    assert "password" in quoted
    assert answer.confidence == "LOW"  # …but no quote holds more than a third of them


def test_quotes_that_cover_the_question_keep_high_confidence() -> None:
    hits = [
        _hit(0, "Atlas on-call handover", "Effective 2 September 2024, Kenji Watanabe is the Atlas on-call owner."),
    ]
    answer = extractive_answer("Who is the Atlas on-call owner?", hits)
    assert answer.answered and answer.confidence == "HIGH"
