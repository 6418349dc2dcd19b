"""PDF, Word and HTML connectors on the real sample files of corpora/formats, and on broken ones."""

from __future__ import annotations

import importlib.util
import shutil
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from kgrag_adapters.connectors import iter_folder
from kgrag_adapters.connectors.docx_file import load_docx
from kgrag_adapters.connectors.html_file import load_html
from kgrag_adapters.connectors.pdf_file import load_pdf
from kgrag_core.chunking import chunk_document
from kgrag_core.chunking.locators import PDF_MEDIA_TYPE, Locator, annotate_spans, chunk_locator
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode

FORMATS = Path(__file__).resolve().parents[2] / "corpora" / "formats"
PDF = FORMATS / "samples" / "handbook" / "returns-policy.pdf"
DOCX = FORMATS / "samples" / "handbook" / "warehouse-safety.docx"
HTML = FORMATS / "samples" / "web" / "carrier-portal.html"


def _samples() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_samples", FORMATS / "make_samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(loader: object, path: Path) -> ConnectorItem:
    assert callable(loader)
    item = loader(path.read_bytes(), doc_id=path.name, source="folder", uri=path.as_uri(), stem=path.stem)
    assert isinstance(item, SourceDocument | ConnectorFailure)
    return item


def _doc(item: ConnectorItem) -> SourceDocument:
    assert isinstance(item, SourceDocument), item
    return item


def test_pdf_text_headings_tables_and_a_page_on_every_chunk() -> None:
    doc = _doc(_load(load_pdf, PDF))
    body = doc.body.decode("utf-8")
    assert doc.title == "Northwind Returns and Claims Policy" and doc.media_type == PDF_MEDIA_TYPE
    assert doc.metadata["author"] == "Maria Santos" and doc.metadata["pages"] == "3"
    assert doc.modified_at == datetime(2026, 2, 20, 9, 30, tzinfo=UTC)
    assert "\n## Reporting damage\n" in body and "\n### Refunds\n" in body  # from font sizes
    assert "| Brightline Freight | 16:00 | North |" in body  # the table as a table ...
    assert "Brightline Freight 16:00" not in body  # ... and not again as running text
    spans = annotate_spans(doc.media_type, body, chunk_document(body, title=doc.title, max_tokens=40))
    pages: dict[str, int] = {}
    for span in spans:
        text = doc.body[span.start_byte : span.end_byte].decode("utf-8")
        place = chunk_locator(doc.media_type, span.breadcrumb, text)
        assert place is not None and place.page is not None, span
        pages[text] = place.page
    assert pages[next(t for t in pages if "48 hours" in t)] == 2
    assert pages[next(t for t in pages if "Kestrel Couriers" in t)] == 3
    assert pages[next(t for t in pages if "every shipment" in t)] == 1


def test_scanned_and_broken_pdfs_get_stable_codes() -> None:
    scanned = load_pdf(_samples().make_scanned_pdf(), doc_id="scan.pdf", source="f", uri="u", stem="scan")
    assert isinstance(scanned, ConnectorFailure) and scanned.code is ErrorCode.NO_TEXT_LAYER
    data = PDF.read_bytes()
    for broken in (data[: len(data) // 2], b"%PDF-1.7\nnot really", b""):
        item = load_pdf(broken, doc_id="b.pdf", source="f", uri="u", stem="b")
        assert isinstance(item, ConnectorFailure) and item.code is ErrorCode.MALFORMED_FILE, item


def test_a_pdf_with_an_empty_page_is_kept_with_a_warning_and_an_encrypted_one_is_refused() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 5, "Only the first page has text.")
    pdf.add_page()  # blank: no text layer on page 2
    pdf.add_page()
    pdf.multi_cell(0, 5, "And the third.")
    doc = _doc(load_pdf(bytes(pdf.output()), doc_id="gap.pdf", source="f", uri="u", stem="gap"))
    assert doc.warnings == ("gap.pdf: page 2 has no text layer.",) and doc.metadata["pages"] == "3"
    body = doc.body.decode("utf-8")
    spans = annotate_spans(doc.media_type, body, chunk_document(body, title=doc.title, max_tokens=5, overlap_tokens=0))
    third = next(s for s in spans if b"third" in doc.body[s.start_byte : s.end_byte])
    assert chunk_locator(doc.media_type, third.breadcrumb, "And the third.") == Locator(page=3, page_end=3)

    locked = FPDF()
    locked.add_page()
    locked.set_font("Helvetica", size=11)
    locked.multi_cell(0, 5, "Secret.")
    locked.set_encryption(owner_password="owner", user_password="user")
    item = load_pdf(bytes(locked.output()), doc_id="locked.pdf", source="f", uri="u", stem="locked")
    assert isinstance(item, ConnectorFailure) and item.code is ErrorCode.SOURCE_UNREADABLE, item


def test_docx_headings_lists_tables_and_properties() -> None:
    doc = _doc(_load(load_docx, DOCX))
    body = doc.body.decode("utf-8")
    assert doc.title == "Warehouse Safety Briefing" and doc.metadata["author"] == "Priya Raman"
    assert doc.modified_at == datetime(2026, 2, 3, 16, 45, tzinfo=UTC)
    assert doc.metadata["published_at"] == "2026-01-12T08:00:00+00:00"
    assert "## Forklift zones\n\nPedestrians must stay behind the yellow lines" in body
    assert "- High-visibility vest on the floor at all times\n- Safety boots" in body
    assert "1. Leave by the nearest marked exit\n1. Gather at assembly point B" in body
    assert "| Early | Tomasz Kowal |" in body
    broken = load_docx(DOCX.read_bytes()[:500], doc_id="w.docx", source="f", uri="u", stem="w")
    assert isinstance(broken, ConnectorFailure) and broken.code is ErrorCode.MALFORMED_FILE


def test_html_main_content_without_boilerplate_and_canonical_uri() -> None:
    doc = _doc(_load(load_html, HTML))
    body = doc.body.decode("utf-8")
    assert doc.uri == "https://intranet.northwind.example/guides/carrier-portal"
    assert doc.metadata["file_uri"] == HTML.as_uri() and doc.title == "Carrier portal guide"
    assert doc.modified_at == datetime(2026, 2, 11, 14, 20, tzinfo=UTC)
    assert body.startswith("# Carrier portal guide\n")
    assert "[Transport Systems team](https://intranet.northwind.example/teams/transport)" in body
    assert "1. Choose the site and the carrier." in body and "- Uploads are limited to 10 MB" in body
    assert "| Saturday | 08:00–14:00 | On-call dispatcher |" in body
    for boilerplate in ("Search the intranet", "People", "Privacy", "Related", "analytics", "font-family"):
        assert boilerplate not in body
    article = b"<body><header>Site menu</header><article><header><h1>Own title</h1></header><p>Text.</p>"
    article += b"<footer>By Ana</footer></article><footer>Copyright</footer></body>"
    own = _doc(load_html(article, doc_id="a.html", source="f", uri="u", stem="a")).body.decode("utf-8")
    assert own == "# Own title\n\nText.\n\nBy Ana\n"  # the article's header and footer stay, the page's go
    bad_date = b'<meta property="article:modified_time" content="last week"><p>x</p>'
    item = load_html(bad_date, doc_id="p.html", source="f", uri="u", stem="p")
    assert isinstance(item, ConnectorFailure) and item.code is ErrorCode.MALFORMED_EVENT


def test_a_folder_with_broken_files_goes_on_to_the_good_ones(tmp_path: Path) -> None:
    shutil.copy(PDF, tmp_path / "a-good.pdf")
    shutil.copy(DOCX, tmp_path / "b-good.docx")
    (tmp_path / "c-broken.pdf").write_bytes(PDF.read_bytes()[:700])
    (tmp_path / "d-scan.pdf").write_bytes(_samples().make_scanned_pdf())
    (tmp_path / "e-broken.docx").write_bytes(b"PK\x03\x04 not a zip")
    (tmp_path / "f-good.html").write_bytes(HTML.read_bytes())
    items = {item.doc_id: item for item in iter_folder(tmp_path)}
    assert {k for k, v in items.items() if isinstance(v, SourceDocument)} == {
        "a-good.pdf",
        "b-good.docx",
        "f-good.html",
    }
    codes = {k: v.code for k, v in items.items() if isinstance(v, ConnectorFailure)}
    assert codes == {
        "c-broken.pdf": ErrorCode.MALFORMED_FILE,
        "d-scan.pdf": ErrorCode.NO_TEXT_LAYER,
        "e-broken.docx": ErrorCode.MALFORMED_FILE,
    }
