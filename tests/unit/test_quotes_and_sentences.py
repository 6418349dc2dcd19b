from kgrag_core.answering.quotes import normalise_for_quote, quote_in_text
from kgrag_core.answering.sentences import split_sentences


def test_quotes_normalise_only_whitespace_quotes_and_dashes() -> None:
    text = "Atlas’s owner is “Maria Chen” — since   March\n2024."
    assert quote_in_text('Atlas\'s owner is "Maria Chen" - since March 2024', text)
    assert not quote_in_text("Atlas's owner is Maria since March 2024", text)  # paraphrase
    assert not quote_in_text("atlas's owner", text)  # case is not normalised
    assert not quote_in_text("   ", text)
    assert normalise_for_quote("a\u2013b\u00a0 c") == "a-b c"


def test_sentence_spans_are_exact_bytes() -> None:
    text = "Zoë runs Harbor. It costs 5 €!\n- Item one\n- Item two\n## Heading\nDone? Yes."
    spans = split_sentences(text)
    raw = text.encode("utf-8")
    assert [s.text for s in spans] == [
        "Zoë runs Harbor.",
        "It costs 5 €!",
        "Item one",
        "Item two",
        "Heading",
        "Done?",
        "Yes.",
    ]
    for s in spans:
        assert raw[s.start_byte : s.end_byte].decode("utf-8") == s.text
