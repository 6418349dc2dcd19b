"""Make the binary sample files of corpora/formats (PDF, Word) from the text below; run from the repo root:

    uv run python corpora/formats/make_samples.py

The generated files are committed; rerun only after changing this script. fpdf2 and python-docx are
dev-only dependencies. Output is deterministic (fixed creation dates, no random IDs), so a rerun
without changes leaves `git status` clean.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent / "samples"
_FIXED = datetime(2026, 2, 20, 9, 30, tzinfo=UTC)

RETURNS_PAGES: list[list[tuple[str, str]]] = [
    [
        ("title", "Northwind Returns and Claims Policy"),
        ("p", "This policy applies to every shipment Northwind Logistics delivers for a customer."),
        ("h1", "Scope"),
        (
            "p",
            "It covers damaged goods, short deliveries and refused pallets at the Leeds, Rotterdam and "
            "Gdansk sites. Claims for lost parcels follow the carrier's own terms.",
        ),
    ],
    [
        ("h1", "Reporting damage"),
        (
            "p",
            "Damaged goods must be reported within 48 hours of delivery, with photographs of the pallet "
            "and the delivery note signed by the driver.",
        ),
        ("h2", "Refunds"),
        ("p", "Approved claims are refunded within 14 working days to the account that paid the invoice."),
    ],
    [
        ("h1", "Carrier cut-off times"),
        ("p", "Same-day collections are accepted until the cut-off time of each carrier:"),
        ("table", "Carrier|Cut-off|Region\nBrightline Freight|16:00|North\nKestrel Couriers|14:30|Benelux"),
        ("p", "Collections booked after the cut-off leave on the next working day."),
    ],
]


def make_pdf(pages: list[list[tuple[str, str]]], title: str, author: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(_FIXED)
    pdf.set_title(title)
    pdf.set_author(author)
    for blocks in pages:
        pdf.add_page()
        for kind, text in blocks:
            if kind == "table":
                pdf.set_font("Helvetica", size=11)
                rows = [line.split("|") for line in text.split("\n")]
                with pdf.table(first_row_as_headings=True) as table:
                    for cells in rows:
                        row = table.row()
                        for cell in cells:
                            row.cell(cell)
                pdf.ln(4)
                continue
            size = {"title": 22, "h1": 16, "h2": 13}.get(kind, 11)
            pdf.set_font("Helvetica", style="B" if kind != "p" else "", size=size)
            pdf.multi_cell(0, size * 0.5, text)
            pdf.ln(3)
    return bytes(pdf.output())


def make_scanned_pdf() -> bytes:
    """A page that is only an image (what a scanner makes): no text layer."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw

    image = Image.new("L", (400, 200), 255)
    ImageDraw.Draw(image).rectangle((20, 20, 380, 60), fill=0)
    pdf = FPDF()
    pdf.set_creation_date(_FIXED)
    pdf.add_page()
    pdf.image(image, x=10, y=10, w=180)
    return bytes(pdf.output())


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    props = document.core_properties
    props.title = "Warehouse Safety Briefing"
    props.author = "Priya Raman"
    props.created = datetime(2026, 1, 12, 8, 0)
    props.modified = datetime(2026, 2, 3, 16, 45)
    props.last_modified_by = "Priya Raman"
    props.revision = 3
    document.add_heading("Warehouse Safety Briefing", level=1)
    document.add_paragraph("Every new starter at the Leeds warehouse attends this briefing on day one.")
    document.add_heading("Forklift zones", level=2)
    document.add_paragraph("Pedestrians must stay behind the yellow lines; forklifts in aisle 7 are limited to 6 km/h.")
    document.add_paragraph("High-visibility vest on the floor at all times", style="List Bullet")
    document.add_paragraph("Safety boots with steel toe caps", style="List Bullet")
    document.add_heading("Fire drill", level=2)
    document.add_paragraph("Leave by the nearest marked exit", style="List Number")
    document.add_paragraph("Gather at assembly point B in the north car park", style="List Number")
    document.add_heading("First aiders", level=2)
    table = document.add_table(rows=3, cols=2)
    rota = [("Shift", "First aider"), ("Early", "Tomasz Kowal"), ("Late", "Grace O'Neill")]
    for row, cells in zip(table.rows, rota, strict=True):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    out = io.BytesIO()
    document.save(out)
    return _deterministic_zip(out.getvalue())


def _deterministic_zip(data: bytes) -> bytes:
    """python-docx stamps zip entries with the current time; fix them so a rerun changes nothing."""
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2026, 2, 3, 16, 45, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(fixed, source.read(info.filename))
    return out.getvalue()


def main() -> None:
    (HERE / "handbook").mkdir(exist_ok=True)
    (HERE / "handbook" / "returns-policy.pdf").write_bytes(
        make_pdf(RETURNS_PAGES, "Northwind Returns and Claims Policy", "Maria Santos")
    )
    (HERE / "handbook" / "warehouse-safety.docx").write_bytes(make_docx())
    print("wrote handbook/returns-policy.pdf, handbook/warehouse-safety.docx")


if __name__ == "__main__":
    main()
