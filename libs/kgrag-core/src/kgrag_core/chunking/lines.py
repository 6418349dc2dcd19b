"""Lines with UTF-8 byte offsets, and YAML front matter detection.

Every offset the chunker produces comes from here. Line terminators (CRLF, LF, lone CR) are ASCII, so
splitting the encoded bytes on them can never cut a multi-byte character, and each line's bytes
decode on their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BOM = b"\xef\xbb\xbf"
_NEWLINE = re.compile(rb"\r\n|\r|\n")
_FRONT_MATTER_OPEN = "---"
_FRONT_MATTER_CLOSE = ("---", "...")
# The first non-blank line of real front matter is a YAML key or a comment; requiring it keeps a plain
# text file that merely starts with a `---` rule from losing its opening paragraphs.
_YAML_KEY_LINE = re.compile(r"(?:[\w.-]+|\"[^\"]*\"|'[^']*')[ \t]*:(?:[ \t]|$)|#")


@dataclass(frozen=True, slots=True)
class Line:
    """One line: `start`/`end` delimit its content (terminator excluded), `text` is that content."""

    start: int
    end: int
    text: str

    @property
    def blank(self) -> bool:
        return not self.text.strip()


def split_lines(data: bytes) -> list[Line]:
    """Split UTF-8 bytes into lines. A leading BOM is not part of the first line."""
    start = len(_BOM) if data.startswith(_BOM) else 0
    lines: list[Line] = []
    for match in _NEWLINE.finditer(data, start):
        lines.append(Line(start, match.start(), data[start : match.start()].decode("utf-8")))
        start = match.end()
    if start < len(data):
        lines.append(Line(start, len(data), data[start:].decode("utf-8")))
    return lines


def front_matter_lines(lines: list[Line]) -> int:
    """How many leading lines are YAML front matter (both `---` delimiters included); 0 if none."""
    if not lines or lines[0].text.rstrip() != _FRONT_MATTER_OPEN:
        return 0
    first_content: str | None = None
    for index in range(1, len(lines)):
        text = lines[index].text
        if text.rstrip() in _FRONT_MATTER_CLOSE:
            if first_content is not None and not _YAML_KEY_LINE.match(first_content):
                return 0
            return index + 1
        if first_content is None and text.strip():
            first_content = text
    return 0


def front_matter_span(data: bytes) -> tuple[int, int] | None:
    """Byte span of the YAML *content* between the front matter delimiters, or None if there is none.

    Connectors use this to parse the same front matter the chunker excludes, so the two never disagree.
    """
    lines = split_lines(data)
    count = front_matter_lines(lines)
    if count == 0:
        return None
    if count == 2:
        return lines[1].start, lines[1].start
    return lines[1].start, lines[count - 2].end
