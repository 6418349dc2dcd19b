"""Attribute value checks: a claim's value must parse as its attribute's type, and is stored normalised.

Normalised forms are stable so that two documents saying "24,500" and "24 500" give the same value (and
supersession compares like with like): integers and numbers as plain decimals, percents as "99.9%", money
as "EUR 1350000", dates as ISO at the precision the text gives ("2024-09-02", "2024-09", "2024"), durations
as "4 business hours". Anything ambiguous is refused rather than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from dateutil import parser as date_parser

from kgrag_core.extraction.ontology import ValueType

MAX_STRING_CHARS = 300

# Thousands separators: comma, space, no-break and thin spaces. A point is not one ("18.000" is ambiguous).
_NUMBER = r"[+-]?(?:\d{1,3}(?:[,\u0020\u00a0\u202f\u2009]\d{3})+|\d+)(?:\.\d+)?"
_SEPARATORS = re.compile(r"[,\u0020\u00a0\u202f\u2009]")
_MULTIPLIERS = {
    "k": Decimal(1_000),
    "thousand": Decimal(1_000),
    "m": Decimal(1_000_000),
    "mn": Decimal(1_000_000),
    "million": Decimal(1_000_000),
    "bn": Decimal(1_000_000_000),
    "b": Decimal(1_000_000_000),
    "billion": Decimal(1_000_000_000),
}
_MULTIPLIER = r"(?:k|thousand|mn|m|million|bn|b|billion)"
_SCALED = re.compile(rf"^(?P<num>{_NUMBER})\s*(?P<mult>{_MULTIPLIER})?$", re.IGNORECASE)
_PERCENT = re.compile(rf"^(?P<num>{_NUMBER})\s*(?:%|percent|per cent|pct)?$", re.IGNORECASE)

_CURRENCY_SYMBOLS = {"€": "EUR", "$": "USD", "us$": "USD", "£": "GBP", "¥": "JPY"}
_CURRENCY_CODES = frozenset(
    {"EUR", "USD", "GBP", "CHF", "JPY", "SEK", "NOK", "DKK", "PLN", "CZK", "HUF", "CAD", "AUD", "NZD", "CNY", "INR"}
)
_CURRENCY = r"(?:us\$|€|\$|£|¥|[a-z]{3})"
_MONEY = re.compile(
    rf"^(?P<pre>{_CURRENCY})?\s*(?P<num>{_NUMBER})\s*(?P<mult>{_MULTIPLIER}\b)?\s*(?P<post>{_CURRENCY})?"
    r"(?:\s*(?:/|per\b|an?\b)\s*(?P<per>[a-z][a-z -]{0,40}?))?$",
    re.IGNORECASE,
)

_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
}
_UNITS = {
    "second": ("s", "sec", "secs", "second", "seconds"),
    "minute": ("min", "mins", "minute", "minutes"),
    "hour": ("h", "hr", "hrs", "hour", "hours"),
    "day": ("d", "day", "days"),
    "week": ("w", "wk", "wks", "week", "weeks"),
    "month": ("mo", "mos", "month", "months"),
    "quarter": ("quarter", "quarters"),
    "year": ("y", "yr", "yrs", "year", "years"),
}
_UNIT_OF = {alias: unit for unit, aliases in _UNITS.items() for alias in aliases}
_DURATION_PART = re.compile(
    r"(?P<num>\d+(?:\.\d+)?|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
    r"\s*-?\s*(?:(?P<kind>business|working|calendar)\s+)?"
    r"(?P<unit>" + "|".join(sorted(_UNIT_OF, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_DURATION_GLUE = re.compile(r"^(?:\s|,|and\b)*$", re.IGNORECASE)
_DURATION_LEAD = re.compile(r"^(?:within|up to|under|at most|max(?:imum)?)\s+", re.IGNORECASE)

_YEAR = re.compile(r"\b\d{4}\b")
_YEAR_FIRST = re.compile(r"^\d{4}[-/.]")
_NUMERIC_DATE = re.compile(r"^(\d{1,2})[./-](\d{1,2})[./-](\d{4})$")
# Two defaults that differ in year, month and day: a field the text did not give comes out different.
_DEFAULT_A = datetime(2000, 1, 1)
_DEFAULT_B = datetime(2001, 2, 2)


def check_value(value_type: ValueType, value: str) -> str | None:
    """The normalised value, or None when `value` is not a valid `value_type`."""
    text = " ".join(value.split())
    if not text:
        return None
    return _CHECKS[value_type](text)


def to_date(value: str, *, need_month: bool = False) -> date | None:
    """A date the text gives (month or year precision allowed: the first day is used), else None.
    With `need_month`, a bare year ("2023") is not a date either."""
    normalised = _check_date(" ".join(value.split()))
    if normalised is None or (need_month and "-" not in normalised):
        return None
    parts = [int(p) for p in normalised.split("-")]
    return date(parts[0], parts[1] if len(parts) > 1 else 1, parts[2] if len(parts) > 2 else 1)


def _decimal(number: str, multiplier: str | None = None) -> Decimal | None:
    try:
        amount = Decimal(_SEPARATORS.sub("", number))
    except InvalidOperation:
        return None
    if multiplier:
        amount *= _MULTIPLIERS[multiplier.lower()]
    return amount


def _plain(amount: Decimal) -> str:
    text = format(amount.normalize(), "f")
    return "0" if text in ("-0", "+0") else text


def _check_integer(text: str) -> str | None:
    match = _SCALED.match(text)
    amount = _decimal(match["num"], match["mult"]) if match else None
    if amount is None or amount != amount.to_integral_value():
        return None
    return _plain(amount)


def _check_number(text: str) -> str | None:
    match = _SCALED.match(text)
    amount = _decimal(match["num"], match["mult"]) if match else None
    return None if amount is None else _plain(amount)


def _check_percent(text: str) -> str | None:
    match = _PERCENT.match(text)
    amount = _decimal(match["num"]) if match else None
    return None if amount is None else f"{_plain(amount)}%"


def _currency(symbol: str) -> str | None:
    code = _CURRENCY_SYMBOLS.get(symbol.lower(), symbol.upper())
    return code if code in _CURRENCY_CODES else None


def _check_money(text: str) -> str | None:
    match = _MONEY.match(text)
    if not match or bool(match["pre"]) == bool(match["post"]):
        return None  # exactly one currency: an amount without one is not money, two is garbage
    code = _currency(match["pre"] or match["post"])
    amount = _decimal(match["num"], match["mult"])
    if code is None or amount is None:
        return None
    per = f" per {' '.join(match['per'].lower().split())}" if match["per"] else ""
    return f"{code} {_plain(amount)}{per}"


def _check_date(text: str) -> str | None:
    if not _YEAR.search(text):
        return None  # a date without a year would be filled in by the parser, i.e. invented
    numeric = _NUMERIC_DATE.match(text)
    if numeric and numeric[1] != numeric[2] and int(numeric[1]) <= 12 and int(numeric[2]) <= 12:
        return None  # 02/09/2024: February or September depends on the writer's locale
    # Year first (ISO) reads year-month-day; otherwise day before month, as written in Europe.
    dayfirst = not _YEAR_FIRST.match(text)
    try:
        # ignoretz: a date needs no zone, and an unknown zone name ("CEST") is only a warning to dateutil.
        first = date_parser.parse(text, default=_DEFAULT_A, dayfirst=dayfirst, ignoretz=True)
        second = date_parser.parse(text, default=_DEFAULT_B, dayfirst=dayfirst, ignoretz=True)
    except (ValueError, OverflowError):
        return None
    if first.year != second.year:
        return None
    if first.month != second.month:
        return f"{first.year:04d}"
    if first.day != second.day:
        return f"{first.year:04d}-{first.month:02d}"
    return f"{first.year:04d}-{first.month:02d}-{first.day:02d}"


def _duration_number(token: str) -> Decimal | None:
    word = _NUMBER_WORDS.get(token.lower())
    return Decimal(word) if word is not None else _decimal(token)


def _check_duration(text: str) -> str | None:
    text = _DURATION_LEAD.sub("", text)
    parts: list[str] = []
    position = 0
    for match in _DURATION_PART.finditer(text):
        if not _DURATION_GLUE.match(text[position : match.start()]):
            return None
        amount = _duration_number(match["num"])
        if amount is None:
            return None
        unit = _UNIT_OF[match["unit"].lower()]
        kind = f"{match['kind'].lower()} " if match["kind"] else ""
        parts.append(f"{_plain(amount)} {kind}{unit}{'' if amount == 1 else 's'}")
        position = match.end()
    if not parts or text[position:].strip():
        return None
    return " ".join(parts)


def _check_string(text: str) -> str | None:
    return text if len(text) <= MAX_STRING_CHARS else None


_CHECKS: dict[ValueType, Callable[[str], str | None]] = {
    ValueType.STRING: _check_string,
    ValueType.INTEGER: _check_integer,
    ValueType.NUMBER: _check_number,
    ValueType.PERCENT: _check_percent,
    ValueType.MONEY: _check_money,
    ValueType.DATE: _check_date,
    ValueType.DURATION: _check_duration,
}
