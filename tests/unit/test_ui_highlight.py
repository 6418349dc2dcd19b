"""The web app's source view cuts a document's text on the UTF-8 bytes a citation names, and its filter form
becomes the API's `filters` object."""

from __future__ import annotations

from kgrag_query_api.ui.filters import api_filters
from kgrag_query_api.ui.highlight import highlight

TEXT = "Owner: José Núñez. Then Kenji Watanabe. Ünïcode ends."


def _span(quote: str) -> tuple[int, int]:
    data, wanted = TEXT.encode("utf-8"), quote.encode("utf-8")
    start = data.index(wanted)
    return start, start + len(wanted)


def test_the_highlight_is_the_cited_bytes_after_non_ascii_text() -> None:
    start, end = _span("Kenji Watanabe")
    assert TEXT.index("Kenji") != start  # characters and bytes differ here: a str slice would be shifted
    parts = highlight(TEXT, start, end)
    assert parts.cited == "Kenji Watanabe"
    assert parts.before + parts.cited + parts.after == TEXT


def test_a_span_of_non_ascii_characters_is_highlighted_whole() -> None:
    parts = highlight(TEXT, *_span("José Núñez"))
    assert (parts.before, parts.cited) == ("Owner: ", "José Núñez")


def test_no_span_or_one_outside_the_text_highlights_nothing() -> None:
    size = len(TEXT.encode("utf-8"))
    for start, end in ((None, None), (5, 5), (10, 3), (0, size + 1)):
        parts = highlight(TEXT, start, end)
        assert (parts.before, parts.cited, parts.after) == (TEXT, "", "")
    assert highlight(TEXT, 0, size).cited == TEXT


def test_the_filter_form_becomes_the_api_filters() -> None:
    assert api_filters("", " ", "", "") is None
    assert api_filters(" wiki, email ,", "2024-01-01", "", "2025-06-30") == {
        "sources": ["wiki", "email"],
        "time_range": {"from": "2024-01-01"},
        "as_of": "2025-06-30",
    }
