"""Cached answers sealed under every document they were built from (issue 9 class 6; ADR 0008).

An answer quotes its evidence, so a cached one (in Redis, in distributed mode) is document text outside
the stores a deletion shreds. It is sealed once per cited document, one layer inside the other, each under
that document's data key: opening it takes every one of those keys, so deleting ANY cited document makes
the entry unreadable — in Redis, its RDB/AOF files and replicas alike — on top of the invalidation that
every deletion already triggers. The cipher is the stores' (`ContentCipher`); this module only arranges
the layers, so the core still does no cryptography.

Format: `0x02 | u32 length | JSON list of doc ids | layers`, the ids (plaintext everywhere by design) in
the order sealed; the innermost layer is sealed under the first.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.shredding import ContentCipher

SEALED_ANSWER = 0x02
_LENGTH = struct.Struct(">I")


def seal_answer(cipher: ContentCipher, doc_ids: Iterable[str], payload: bytes) -> bytes | None:
    """`payload` sealed under each document's key in turn, or None (do not cache) when one of them has no
    key any more: a document deleted since the search ran must not get a fresh key for this copy."""
    docs = sorted(set(doc_ids))
    sealed = payload
    try:
        for doc_id in docs:
            sealed = cipher.sealer(doc_id, create=False)(sealed)
    except KgragError as err:
        if err.code is not ErrorCode.CONTENT_SHREDDED:
            raise
        return None
    header = json.dumps(docs).encode("utf-8")
    return bytes([SEALED_ANSWER]) + _LENGTH.pack(len(header)) + header + sealed


def open_answer(cipher: ContentCipher, stored: bytes) -> bytes | None:
    """The payload, or None when any cited document's key is gone (or the entry is not a sealed answer)."""
    if len(stored) < 1 + _LENGTH.size or stored[0] != SEALED_ANSWER:
        return None
    (length,) = _LENGTH.unpack_from(stored, 1)
    start = 1 + _LENGTH.size
    docs = json.loads(stored[start : start + length])
    opened: bytes | None = stored[start + length :]
    for doc_id in reversed(docs):
        opened = cipher.open(str(doc_id), opened) if opened is not None else None
    return opened
