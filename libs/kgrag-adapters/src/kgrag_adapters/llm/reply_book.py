"""A reply book: tier-3 replies written ahead of time, per document, served as if a model wrote them.

No model can be called offline, in tests or in CI, and a recording (`replay.py`) only answers the exact
requests it was made from. A reply book is keyed by what a model reads instead: each line holds one
document's items (`{"doc_id": ..., "reply": {"entities": [...], "relations": [...], "claims": [...]}}`,
items without `chunk_id`), and a request is answered with every item whose quote is in one of the
request's chunks, filed under that chunk. It therefore survives re-chunking and any batch size, and its
items pass through the same parsing and validation as a model's. It is a stand-in, not a model: the model
ID says so, and what it measures is the pipeline on those replies, not a model's skill.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kgrag_adapters.lifecycle import Closeable
from kgrag_core.answering.quotes import normalise_for_quote
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.tier3 import rendered_chunks
from kgrag_core.ports import ChatMessage

SECTIONS = ("entities", "relations", "claims")


class ReplyBookChatModel(Closeable):
    def __init__(self, path: Path, *, model_id: str | None = None) -> None:
        self._items, digest = _load(path)
        # The content's hash is in the ID, so an edited book misses the extraction cache like a new model.
        self._model_id = model_id or f"reply-book:{digest[:12]}"

    @property
    def model_id(self) -> str:
        return self._model_id

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None) -> str:
        chunks = rendered_chunks(messages[-1].content) if messages else []
        if not chunks:
            raise KgragError(
                ErrorCode.LLM_UNAVAILABLE,
                "a reply book answers tier-3 extraction requests only",
                hint="configure a chat model (KGRAG_LLM_*) for answering; the reply book serves extraction",
            )
        reply: dict[str, list[dict[str, Any]]] = {section: [] for section in SECTIONS}
        for chunk_id, text in chunks:
            haystack = normalise_for_quote(text)
            for section, needle, item in self._items:
                if needle in haystack:
                    reply[section].append({**item, "chunk_id": chunk_id})
        return json.dumps(reply, ensure_ascii=False)

    def close(self) -> None:
        """Nothing to release; present so wiring can close any chat model alike."""


def _load(path: Path) -> tuple[list[tuple[str, str, dict[str, Any]]], str]:
    try:
        body = path.read_bytes()
        lines = body.decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            f"cannot read the reply book {path}: {err}",
            hint="point KGRAG_EXTRACTION_REPLY_BOOK at a JSONL reply book",
        ) from err
    items: list[tuple[str, str, dict[str, Any]]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            reply = record["reply"]
            for section in SECTIONS:
                for item in reply.get(section, []):
                    needle = normalise_for_quote(item["quote"])
                    if needle:
                        items.append((section, needle, {k: v for k, v in item.items() if k != "chunk_id"}))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                f"reply book {path} line {number} is not "
                f'{{"doc_id": ..., "reply": {{"entities": [...], ...}}}} with quoted items: {err!r}',
                hint="fix that line of the reply book",
            ) from err
    return items, hashlib.sha256(body).hexdigest()
