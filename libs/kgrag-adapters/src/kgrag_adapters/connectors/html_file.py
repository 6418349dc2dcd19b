"""HTML pages (selectolax): the main content without the page's boilerplate, rendered as Markdown.

Boilerplate is what every page of a site repeats: navigation, the page's header and footer (an
article's own stay), sidebars, forms, scripts (by element and ARIA role). The content root is
`<main>`, else `<article>`, else `<body>`. Headings, lists, tables, code and quotes keep their
structure; links stay as `[text](href)`. The canonical URL (`<link rel="canonical">`) is the
document's uri, else the file's; the title is `og:title`, `<title>` or the first `<h1>`; the date is
`article:modified_time` (else `article:published_time`, `<meta name="date">`, the first
`<time datetime>`).
"""

from __future__ import annotations

from datetime import datetime

from selectolax.lexbor import LexborHTMLParser, LexborNode

from kgrag_adapters.connectors._common import failure, markdown_table
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import parse_timestamp

MEDIA_TYPE = "text/html"
_BOILERPLATE = (
    "script, style, noscript, template, nav, aside, form, iframe, svg, button, "
    "[role=navigation], [role=banner], [role=contentinfo], [role=complementary], [aria-hidden=true], [hidden]"
)
# A page's header and footer are boilerplate; an article's own (its title, its byline) are content.
_PAGE_PARTS = "header, footer"
_CONTENT = frozenset({"article", "main"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_CONTAINERS = frozenset(
    {
        "div",
        "section",
        "article",
        "main",
        "body",
        "header",
        "footer",
        "figure",
        "figcaption",
        "details",
        "summary",
        "dl",
        "center",
    }
)


def load_html(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return failure(uri, doc_id, ErrorCode.INVALID_UTF8, f"{doc_id} is not UTF-8 (byte {err.start}).")
    tree = LexborHTMLParser(text)  # any text parses (as a browser would show it): no MALFORMED_FILE here
    canonical = _attr(tree.css_first("link[rel=canonical]"), "href")
    title = (
        _attr(tree.css_first("meta[property='og:title']"), "content")
        or _node_text(tree.css_first("title"))
        or _node_text(tree.css_first("h1"))
        or stem
    )
    try:
        modified = _date(tree, "article:modified_time") or _date(tree, "article:published_time") or _date(tree, "date")
        published = _date(tree, "article:published_time")
    except KgragError as err:
        return failure(uri, doc_id, err.code, f"{doc_id}: {err.message}")
    for node in tree.css(_BOILERPLATE):
        node.decompose()
    for node in tree.css(_PAGE_PARTS):
        if not _inside_content(node):
            node.decompose()
    root = tree.css_first("main") or tree.css_first("article") or tree.body
    blocks = _blocks(root) if root is not None else []
    body = "\n\n".join(block for block in blocks if block.strip())
    metadata = {"published_at": published.isoformat()} if published else {}
    if canonical and canonical.startswith(("http://", "https://")):
        metadata["file_uri"] = uri
        uri = canonical
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=uri,
        title=title,
        body=(body + "\n").encode("utf-8") if body else b"",  # empty: the core reports EMPTY_DOCUMENT
        acl=default_acl,  # a web page carries no reader list: its sidecar or folder ACL file gives it
        modified_at=modified,
        media_type=MEDIA_TYPE,
        metadata=metadata,
    )


def _blocks(node: LexborNode) -> list[str]:
    out: list[str] = []
    inline: list[str] = []

    def flush() -> None:
        text = _clean("".join(inline))
        inline.clear()
        if text:
            out.append(text)

    child = node.child
    while child is not None:
        tag = child.tag
        if tag in _HEADINGS:
            flush()
            if heading := _clean(_inline(child)):
                out.append("#" * _HEADINGS[tag] + " " + heading)
        elif tag in ("ul", "ol"):
            flush()
            out.append(_list(child, ordered=tag == "ol", depth=0))
        elif tag == "table":
            flush()
            out.append(_table(child))
        elif tag == "pre":
            flush()
            out.append("```\n" + (child.text(deep=True) or "").strip("\n") + "\n```")
        elif tag == "blockquote":
            flush()
            out.extend("\n".join("> " + line for line in block.split("\n")) for block in _blocks(child))
        elif tag == "p":
            flush()
            inline.append(_inline(child))
            flush()
        elif tag in _CONTAINERS or tag == "li":
            flush()
            out.extend(_blocks(child))
        elif tag == "hr":
            flush()
        else:
            inline.append(_inline(child))
        child = child.next
    flush()
    return [block for block in out if block]


def _inline(node: LexborNode) -> str:
    if node.tag == "-text":
        return node.text_content or ""
    if node.tag == "br":
        return " "
    parts: list[str] = []
    child = node.child
    while child is not None:
        parts.append(_inline(child))
        child = child.next
    text = "".join(parts)
    if node.tag == "a":
        href = _attr(node, "href")
        label = _clean(text)
        if href and label and not href.startswith(("javascript:", "#")):
            return f"[{label}]({href})"
    if node.tag == "code":
        return f"`{_clean(text)}`" if _clean(text) else ""
    return text


def _list(node: LexborNode, *, ordered: bool, depth: int) -> str:
    lines: list[str] = []
    item = node.child
    while item is not None:
        if item.tag == "li":
            own: list[str] = []
            nested: list[str] = []
            child = item.child
            while child is not None:
                if child.tag in ("ul", "ol"):
                    nested.append(_list(child, ordered=child.tag == "ol", depth=depth + 1))
                else:
                    own.append(_inline(child))
                child = child.next
            marker = "1. " if ordered else "- "
            lines.append("  " * depth + marker + _clean("".join(own)))
            lines.extend(nested)
        item = item.next
    return "\n".join(line for line in lines if line.strip() not in ("-", "1."))


def _table(node: LexborNode) -> str:
    return markdown_table([[_inline(cell) for cell in row.css("th, td")] for row in node.css("tr")])


def _date(tree: LexborHTMLParser, name: str) -> datetime | None:
    if name == "date":
        value = _attr(tree.css_first("meta[name=date]"), "content")
        value = value or _attr(tree.css_first("time[datetime]"), "datetime")
    else:
        value = _attr(tree.css_first(f"meta[property='{name}']"), "content")
    return parse_timestamp(value or None, field=name)


def _attr(node: LexborNode | None, name: str) -> str:
    if node is None:
        return ""
    return _clean(node.attributes.get(name) or "")


def _inside_content(node: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in _CONTENT:
            return True
        parent = parent.parent
    return False


def _node_text(node: LexborNode | None) -> str:
    return _clean(node.text()) if node is not None else ""


def _clean(text: str) -> str:
    return " ".join(text.split())
