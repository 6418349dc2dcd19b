"""PDF files (pdfplumber): the text layer in reading order, rendered as Markdown, one page after another.

The stored body is that rendering: pages separated by a form-feed line (`locators.PAGE_BREAK`), so the
page of any byte offset is 1 + the form feeds before it (the page map) and every chunk and citation
names its page. Lines set clearly larger than the body text become headings (the largest size `#`, the
next `##`, then `###`); tables pdfplumber finds become Markdown tables in their place and their cells are
left out of the running text. A PDF without any text (a scan) is refused with NO_TEXT_LAYER, never
stored empty; one that cannot be parsed gets MALFORMED_FILE.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from statistics import median
from typing import Any

import pdfplumber
from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
from pdfminer.pdfparser import PDFSyntaxError
from pdfminer.psparser import PSException
from pdfplumber.utils.exceptions import PdfminerException

from kgrag_adapters.connectors._common import failure, markdown_table
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.chunking.locators import PAGE_BREAK, PDF_MEDIA_TYPE
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode

_HEADING_RATIO = 1.15  # a line this much larger than the body text is a heading
_PDF_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(Z|[+-]\d{2}'?\d{2}'?)?")
_PARSE_ERRORS = (PdfminerException, PDFSyntaxError, PSException, ValueError, KeyError, TypeError, IndexError)


def load_pdf(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            info = dict(pdf.metadata or {})
            pages = [_page_items(page) for page in pdf.pages]
    except (*_PARSE_ERRORS, PDFPasswordIncorrect, PDFEncryptionError) as err:
        # pdfplumber wraps pdfminer's own error as its first argument.
        cause = err.args[0] if isinstance(err, PdfminerException) and err.args else err
        if isinstance(cause, PDFPasswordIncorrect | PDFEncryptionError):
            return failure(uri, doc_id, ErrorCode.SOURCE_UNREADABLE, f"{doc_id} is encrypted; decrypt it first.")
        why = str(cause) or type(cause).__name__
        return failure(uri, doc_id, ErrorCode.MALFORMED_FILE, f"{doc_id} is not a readable PDF: {why}")
    if not any(pages):
        return failure(
            uri,
            doc_id,
            ErrorCode.NO_TEXT_LAYER,
            f"{doc_id} has no text layer on any of its {len(pages)} page(s) (a scan?); OCR it first.",
        )
    levels = _heading_levels([size for items in pages for kind, size, _ in items if kind == "line"])
    rendered = [_render_page(items, levels) for items in pages]
    warnings = tuple(f"{doc_id}: page {n} has no text layer." for n, text in enumerate(rendered, 1) if not text)
    body = PAGE_BREAK.join(rendered) + "\n"
    title = _text(info.get("Title")) or _first_heading(rendered) or stem
    metadata = {"pages": str(len(rendered))}
    if author := _text(info.get("Author")):
        metadata["author"] = author
    created = _pdf_date(info.get("CreationDate"))
    if created is not None:
        metadata["published_at"] = created.isoformat()
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=uri,
        title=title,
        body=body.encode("utf-8"),
        acl=default_acl,  # a PDF carries no reader list: its sidecar or folder ACL file gives it (else public)
        modified_at=_pdf_date(info.get("ModDate")) or created,
        media_type=PDF_MEDIA_TYPE,
        metadata=metadata,
        warnings=warnings,
    )


# A page as items in reading order: ("line", font size, text) or ("table", 0, markdown).
_Item = tuple[str, float, str]


def _page_items(page: Any) -> list[_Item]:
    tables = page.find_tables()
    boxes = [table.bbox for table in tables]

    def outside(obj: dict[str, Any]) -> bool:
        return not any(x0 <= obj["x0"] and obj["x1"] <= x1 and top <= obj["top"] and obj["bottom"] <= bottom
                       for x0, top, x1, bottom in boxes)  # fmt: skip

    placed: list[tuple[float, _Item]] = []
    previous_bottom: float | None = None
    for line in page.filter(outside).extract_text_lines(return_chars=True, strip=True):
        text = " ".join(str(line["text"]).split())
        if not text:
            continue
        size = float(median(float(char["size"]) for char in line["chars"]))
        gap = None if previous_bottom is None else float(line["top"]) - previous_bottom
        previous_bottom = float(line["bottom"])
        # A wide gap opens a new paragraph; a narrow one continues it (marked by a leading space).
        joined = gap is not None and gap < 0.6 * size
        placed.append((float(line["top"]), ("line", size, (" " if joined else "") + text)))
    for table in tables:
        if rendered := markdown_table([[str(cell or "") for cell in row] for row in table.extract()]):
            placed.append((float(table.bbox[1]), ("table", 0.0, rendered)))
    placed.sort(key=lambda entry: entry[0])
    return [item for _, item in placed]


def _heading_levels(sizes: list[float]) -> dict[float, int]:
    """Font size -> heading level: sizes clearly above the most common (body) size, largest first."""
    if not sizes:
        return {}
    body = Counter(round(size, 1) for size in sizes).most_common(1)[0][0]
    larger = sorted({round(s, 1) for s in sizes if s >= body * _HEADING_RATIO}, reverse=True)
    return {size: min(level, 3) for level, size in enumerate(larger, 1)}


def _render_page(items: list[_Item], levels: dict[float, int]) -> str:
    blocks: list[str] = []
    for kind, size, text in items:
        level = levels.get(round(size, 1)) if kind == "line" else None
        if kind == "table":
            blocks.append(text)
        elif level is not None:
            blocks.append("#" * level + " " + text.strip())
        elif text.startswith(" ") and blocks and not blocks[-1].startswith(("#", "|")):
            blocks[-1] += text
        else:
            blocks.append(text.strip())
    return "\n\n".join(blocks)


def _first_heading(pages: list[str]) -> str:
    for page in pages:
        for line in page.split("\n"):
            if line.startswith("#"):
                return line.lstrip("#").strip()
    return ""


def _text(value: object) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return " ".join(value.split()) if isinstance(value, str) else ""


def _pdf_date(value: object) -> datetime | None:
    """A PDF date string (`D:YYYYMMDDHHmmSS+HH'mm'`); None when absent or unreadable (not our error)."""
    match = _PDF_DATE.match(_text(value))
    if match is None:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        tz = UTC
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace("'", "")
            tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0)))
        local = datetime(
            int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0), int(second or 0), tzinfo=tz
        )
    except ValueError:
        return None
    return local.astimezone(UTC)
