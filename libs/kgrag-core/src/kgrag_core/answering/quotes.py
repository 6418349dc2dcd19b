"""Quote verification: a quoted claim must be found in its chunk's stored text.

Only whitespace, quotation marks and dashes are normalised; nothing fuzzier, so a model cannot pass off
a paraphrase as a quote.
"""

from __future__ import annotations

import re

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
    }
)
_SPACE = re.compile(r"\s+")


def normalise_for_quote(text: str) -> str:
    return _SPACE.sub(" ", text.translate(_QUOTES)).strip()


def quote_in_text(quote: str, text: str) -> bool:
    needle = normalise_for_quote(quote)
    return bool(needle) and needle in normalise_for_quote(text)
