"""Body and document-ID validation: the codes every entry point reports."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import decode_body, parse_timestamp, validate_doc_id, validate_label


def code_of(excinfo: pytest.ExceptionInfo[KgragError]) -> ErrorCode:
    return excinfo.value.code


def test_decode_body_returns_exact_text() -> None:
    body = "\ufeff# Café 中文 👩‍💻\r\nline\r".encode()
    text = decode_body(body, max_bytes=1000)
    assert text.encode("utf-8") == body  # BOM and line endings kept: offsets stay valid
    assert text.startswith("\ufeff")


@pytest.mark.parametrize(
    ("body", "offset"),
    [(b"\xff", 0), (b"abc\xe9def", 3), ("é".encode() + b"\xc3", 2), (b"ok \xed\xa0\x80", 3), (b"\xc0\xaf", 0)],
)
def test_invalid_utf8_reports_the_first_bad_byte(body: bytes, offset: int) -> None:
    with pytest.raises(KgragError) as excinfo:
        decode_body(body, max_bytes=100)
    assert code_of(excinfo) is ErrorCode.INVALID_UTF8
    assert f"byte offset {offset}" in excinfo.value.message


def test_too_large_names_size_limit_and_setting() -> None:
    with pytest.raises(KgragError) as excinfo:
        decode_body(b"x" * 11, max_bytes=10)
    assert code_of(excinfo) is ErrorCode.DOCUMENT_TOO_LARGE
    assert "11" in excinfo.value.message and "10" in excinfo.value.message
    assert excinfo.value.hint is not None and "KGRAG_MAX_DOCUMENT_BYTES" in excinfo.value.hint
    assert decode_body(b"x" * 10, max_bytes=10) == "x" * 10


def test_size_is_checked_before_encoding() -> None:
    with pytest.raises(KgragError) as excinfo:
        decode_body(b"\xff" * 20, max_bytes=10)
    assert code_of(excinfo) is ErrorCode.DOCUMENT_TOO_LARGE


@pytest.mark.parametrize("body", [b"", b"   ", b"\r\n\t \n", "\ufeff".encode(), "\ufeff \n\u3000".encode()])
def test_empty_documents(body: bytes) -> None:
    with pytest.raises(KgragError) as excinfo:
        decode_body(body, max_bytes=100)
    assert code_of(excinfo) is ErrorCode.EMPTY_DOCUMENT


@pytest.mark.parametrize("doc_id", ["a", "notes/atlas.md", "x" * 256, "中文/文档 1", "with space inside"])
def test_valid_doc_ids(doc_id: str) -> None:
    assert validate_doc_id(doc_id) == doc_id


@pytest.mark.parametrize(
    ("doc_id", "code"),
    [
        ("", ErrorCode.MISSING_FIELD),
        ("   ", ErrorCode.MISSING_FIELD),
        ("x" * 257, ErrorCode.MALFORMED_EVENT),
        (" lead", ErrorCode.MALFORMED_EVENT),
        ("trail\n", ErrorCode.MALFORMED_EVENT),
        ("a\x00b", ErrorCode.MALFORMED_EVENT),
        ("a\x1fb", ErrorCode.MALFORMED_EVENT),
        ("a\u2028b", ErrorCode.MALFORMED_EVENT),
        ("a\ud800b", ErrorCode.MALFORMED_EVENT),
    ],
)
def test_invalid_doc_ids(doc_id: str, code: ErrorCode) -> None:
    with pytest.raises(KgragError) as excinfo:
        validate_doc_id(doc_id)
    assert code_of(excinfo) is code


def test_parse_timestamp() -> None:
    assert parse_timestamp(None, field="f") is None
    assert parse_timestamp("2024-05-01", field="f") == datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_timestamp("2024-05-01T09:30:00Z", field="f") == datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    assert parse_timestamp("2024-05-01T11:30:00+02:00", field="f") == datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    assert parse_timestamp("2024-05-01 09:30", field="f") == datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    assert parse_timestamp(date(2024, 5, 1), field="f") == datetime(2024, 5, 1, tzinfo=UTC)
    aware = datetime(2024, 5, 1, 12, tzinfo=timezone(timedelta(hours=-5)))
    assert parse_timestamp(aware, field="f") == datetime(2024, 5, 1, 17, tzinfo=UTC)
    for bad in ["yesterday", "2024-13-01", "", 20240501, ["2024-05-01"]]:
        with pytest.raises(KgragError) as excinfo:
            parse_timestamp(bad, field="published_at")
        assert code_of(excinfo) is ErrorCode.MALFORMED_EVENT
        assert "published_at" in excinfo.value.message


@pytest.mark.parametrize("bad", ["Q3\x00plan", "a\x01b", "tab\there", "line\u2028sep", "a\ud800b"])
def test_a_title_or_uri_with_a_control_character_is_malformed_like_a_doc_id(bad: str) -> None:
    with pytest.raises(KgragError) as excinfo:
        validate_label(bad, field="title")
    assert code_of(excinfo) is ErrorCode.MALFORMED_EVENT and "title" in excinfo.value.message


def test_ordinary_titles_and_uris_pass_unchanged() -> None:
    for good in ("", "Q3 plan: Café 中文 👩‍💻", "file:///srv/docs/a%00b.md", "wiki://x/y?z=1#L2"):
        assert validate_label(good, field="uri") == good
