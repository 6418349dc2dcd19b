"""E-mail files (.eml): a normalised UTF-8 text rendering of the headers that matter plus the body.

The stored body is that rendering, not the raw MIME bytes: transfer encodings, charsets and multipart
structure would otherwise end up in chunks and in the keyword index.
"""

from __future__ import annotations

import email
import email.errors
import re
from email import policy
from email.message import EmailMessage, Message
from html.parser import HTMLParser

from kgrag_adapters.connectors._common import failure
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode
from kgrag_core.validation import parse_timestamp

MEDIA_TYPE = "text/plain"
_HEADERS = ("From", "To", "Cc", "Date", "Subject")
_LINE_BREAKS = re.compile(r"[\r\n]+")
_BLANK_RUNS = re.compile(r"\n{3,}")
# The stdlib parser reports most damage as defects, but malformed headers have raised these from
# CPython's header value parser, and an unknown charset raises LookupError when the body is decoded.
_PARSE_ERRORS = (email.errors.MessageError, LookupError, UnicodeError, ValueError, IndexError)


def load_email(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    try:
        message = email.message_from_bytes(data, policy=policy.default)
        headers = {name: _header(message, name) for name in _HEADERS}
        body = _body_text(message)
        date_header = message["Date"]
    except _PARSE_ERRORS as err:
        return failure(uri, doc_id, ErrorCode.MALFORMED_EMAIL, f"The e-mail cannot be parsed: {err}")
    if not any(headers.values()):
        return failure(uri, doc_id, ErrorCode.MALFORMED_EMAIL, "The file has no e-mail headers.")

    rendered = [f"From: {headers['From']}", f"To: {headers['To']}"]
    if headers["Cc"]:
        rendered.append(f"Cc: {headers['Cc']}")
    rendered += [f"Date: {headers['Date']}", f"Subject: {headers['Subject']}", "", body]
    # An unparsable Date header is kept in the rendering but gives no timestamp (it is not our error).
    sent = getattr(date_header, "datetime", None)
    metadata = {"sender": headers["From"], "recipients": ", ".join(v for v in (headers["To"], headers["Cc"]) if v)}
    if message_id := _header(message, "Message-ID"):
        metadata["message_id"] = message_id
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=uri,
        title=headers["Subject"] or stem,
        body=("\n".join(rendered).rstrip() + "\n").encode("utf-8"),
        acl=default_acl,  # an e-mail carries no ACL: its sidecar or folder ACL file gives it (else public)
        modified_at=parse_timestamp(sent, field="Date") if sent is not None else None,
        media_type=MEDIA_TYPE,
        metadata=metadata,
    )


def _header(message: Message, name: str) -> str:
    value = message[name]
    # Unfolded by the policy already; any stray line break would forge a header line in the rendering.
    return "" if value is None else _LINE_BREAKS.sub(" ", str(value)).strip()


def _body_text(message: Message) -> str:
    if not isinstance(message, EmailMessage):  # policy.default always builds EmailMessage
        raise email.errors.MessageError("unexpected message class")
    part = message.get_body(preferencelist=("plain",))
    if part is not None:
        text = str(part.get_content())
    else:
        part = message.get_body(preferencelist=("html",))
        text = html_to_text(str(part.get_content())) if part is not None else ""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _BLANK_RUNS.sub("\n\n", "\n".join(line.rstrip() for line in text.split("\n"))).strip()


class _TextExtractor(HTMLParser):
    _SKIP = frozenset({"script", "style", "head", "title"})
    _BLOCK = frozenset({"p", "div", "br", "li", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Visible text of an HTML body: tags dropped, entities decoded, block elements on their own lines."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()
