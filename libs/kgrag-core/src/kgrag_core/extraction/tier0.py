"""Tier 0: keep boilerplate, near-empty and duplicate chunks away from the extractors.

Skipped chunks stay searchable; only extraction is spared. Boilerplate and low-information checks are
pure functions of the text. Duplicates are found against the store: exact copies by content hash,
near-copies by MinHash signatures bucketed with LSH band keys (datasketch computes both; PostgreSQL holds
them between batches).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from datasketch import MinHash, MinHashLSH

from kgrag_core.answering.quotes import normalise_for_quote
from kgrag_core.documents import Chunk
from kgrag_core.extraction.model import SkipReason
from kgrag_core.extraction.records import MinHashEntry
from kgrag_core.extraction.records_text import record_lines
from kgrag_core.ports import ExtractionStore

# --- boilerplate and low information --------------------------------------------------------------

MIN_CONTENT_WORDS = 6
# Lines after a sign-off that still belong to the signature (name, title, company, phone).
_SIGNATURE_TAIL_LINES = 5
_SIGNATURE_TAIL_WORDS = 8

_HEADER_LINE = re.compile(r"^(from|to|cc|bcc|date|sent|subject|reply-to)\s*:", re.IGNORECASE)
_SIGN_OFF = re.compile(
    r"^(best|kind|warm|many thanks and)?\s*(regards|wishes)[,.!]?$"
    r"|^(thanks|thank you|many thanks|cheers|best|sincerely|yours( truly| sincerely)?|all the best)[,.!]?$",
    re.IGNORECASE,
)
_BOILERPLATE_LINE = re.compile(
    r"^(sent from my \S.*|get outlook for \S.*|--+|_{3,}|page \d+ (of|/) \d+|\d+ (of|/) \d+)$", re.IGNORECASE
)
# Paragraph-level: disclaimers and footers are recognised by what they say, not by where they stand.
_DISCLAIMER = re.compile(
    r"\bconfidential(ity)? notice\b"
    r"|\bdisclaimer\s*:"
    r"|\bintended (solely |only )?for the (use of the )?(named )?(addressee|recipient|individual)"
    r"|\bif you (are not the intended recipient|have received this (e-?mail|message|communication) in error)"
    r"|\bunsubscribe\b"
    r"|\b(manage|update) your (e-?mail |notification |subscription )?preferences\b"
    r"|\byou are receiving this (e-?mail|message|newsletter)\b",
    re.IGNORECASE,
)
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"(https?://|www\.)\S+", re.IGNORECASE)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_WORD = re.compile(r"[^\W_]+")


def _content_words(line: str) -> int:
    line = _HTML_TAG.sub(" ", _URL.sub(" ", _MD_LINK.sub(r"\1", line)))
    return len(_WORD.findall(line))


def _paragraphs(text: str) -> list[list[str]]:
    paragraphs: list[list[str]] = [[]]
    for raw in text.splitlines():
        line = raw.strip()
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def classify_chunk(text: str) -> SkipReason | None:
    """BOILERPLATE when the chunk is nothing but signatures, disclaimers, footers or page headers;
    LOW_INFORMATION when fewer than MIN_CONTENT_WORDS words remain without header lines, links and markup;
    None for anything else, and always for a structured record (its fields are facts however short)."""
    if record_lines(text) is not None:
        return None
    boilerplate = False
    words = 0
    tail = 0  # lines still inside a signature block after a sign-off ("Thanks,", blank line, name)
    for paragraph in _paragraphs(text):
        if _DISCLAIMER.search(" ".join(paragraph)):
            boilerplate = True
            continue
        for line in paragraph:
            if _SIGN_OFF.match(line) or _BOILERPLATE_LINE.match(line):
                boilerplate = True
                tail = _SIGNATURE_TAIL_LINES if _SIGN_OFF.match(line) else tail
            elif tail and _content_words(line) <= _SIGNATURE_TAIL_WORDS:
                tail -= 1
            elif not _HEADER_LINE.match(line):
                tail = 0
                words += _content_words(line)
    if words >= MIN_CONTENT_WORDS:
        return None
    return SkipReason.BOILERPLATE if boilerplate else SkipReason.LOW_INFORMATION


# --- MinHash near-duplicates ----------------------------------------------------------------------

NUM_PERM = 128
SEED = 20240401  # fixed: signatures stored in PostgreSQL must compare across processes and releases
SCHEME = "affine32"
SHINGLE_WORDS = 3
LSH_THRESHOLD = 0.8


def normalise_for_minhash(text: str) -> list[str]:
    """Lowercased words of the NFKC text, quote marks and dashes folded as for quote checks."""
    return _WORD.findall(normalise_for_quote(unicodedata.normalize("NFKC", text)).lower())


def _shingles(text: str) -> list[bytes]:
    words = normalise_for_minhash(text)
    if len(words) <= SHINGLE_WORDS:
        return [" ".join(words).encode("utf-8")]
    return [" ".join(words[i : i + SHINGLE_WORDS]).encode("utf-8") for i in range(len(words) - SHINGLE_WORDS + 1)]


@lru_cache(maxsize=1)
def _template() -> MinHash:
    # Building the permutations is the costly part of a MinHash; every signature shares one set.
    return MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME)


@lru_cache(maxsize=1)
def _hashranges() -> tuple[tuple[int, int], ...]:
    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
    return tuple((int(start), int(end)) for start, end in lsh.hashranges)


def minhash_signature(text: str) -> tuple[int, ...]:
    """NUM_PERM MinHash values over the word 3-shingles of the normalised text."""
    minhash = _template().copy()
    minhash.update_batch(_shingles(text))
    return tuple(int(v) for v in minhash.hashvalues)


def _minhash(signature: Sequence[int]) -> MinHash:
    template = _template()
    return MinHash(
        seed=SEED,
        hashvalues=np.asarray(signature, dtype=np.uint64),
        permutations=template.permutations,
        scheme=SCHEME,
    )


def estimated_jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    return float(_minhash(a).jaccard(_minhash(b)))


def band_keys(signature: Sequence[int]) -> list[str]:
    """One key per LSH band, with datasketch's band count and width for threshold 0.8 and 128 permutations:
    two chunks share a key when one band of their signatures is identical."""
    keys = []
    for band, (start, end) in enumerate(_hashranges()):
        values = ",".join(str(v) for v in signature[start:end])
        keys.append(f"b{band}:{hashlib.sha256(values.encode('ascii')).hexdigest()[:16]}")
    return keys


# --- duplicate detection --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Fresh:
    chunk: Chunk
    signature: tuple[int, ...]
    keys: tuple[str, ...]


Decision = tuple[SkipReason, str]


class _Deduper:
    """Decides, for each chunk of a batch, whether an older chunk already says the same.

    "Older" follows the store's lists (oldest first): a chunk the list holds is newer than those before it;
    a batch chunk the list does not hold is newer than all of the list, and batch order decides among
    those. A duplicate is never chosen as a representative (its own representative stands in for it), so
    there are no chains; a decision still in progress is never consulted, and a chunk never becomes its
    own representative, so there are no cycles even where the two lists order chunks differently.
    """

    def __init__(self, chunks: Sequence[Chunk], store: ExtractionStore, threshold: float) -> None:
        self.store = store
        self.threshold = threshold
        self.fresh = [
            _Fresh(c, sig, tuple(band_keys(sig))) for c, sig in ((c, minhash_signature(c.text)) for c in chunks)
        ]
        self.by_id = {f.chunk.chunk_id: f for f in self.fresh}
        self.by_hash = store.chunks_with_hash(sorted({c.content_hash for c in chunks}))
        self.signatures = {f.chunk.chunk_id: f.signature for f in self.fresh}
        self.decisions: dict[str, Decision | None] = {}
        self.in_progress: set[str] = set()
        self.stored: dict[str, Decision | None] = {}

    def run(self) -> dict[str, Decision]:
        for item in self.fresh:
            self.decide(item.chunk.chunk_id)
        return {chunk_id: d for chunk_id, d in self.decisions.items() if d is not None}

    def decide(self, chunk_id: str) -> Decision | None:
        if chunk_id not in self.decisions:
            self.in_progress.add(chunk_id)
            item = self.by_id[chunk_id]
            self.decisions[chunk_id] = self._exact(item) or self._near(item)
            self.in_progress.discard(chunk_id)
        return self.decisions[chunk_id]

    def _older(self, chunk_id: str, listed: Sequence[str], batch_match: Callable[[_Fresh], bool]) -> list[str]:
        if chunk_id in listed:
            return list(listed[: listed.index(chunk_id)])
        newer_than_list = []
        for other in self.fresh:
            if other.chunk.chunk_id == chunk_id:
                break
            if other.chunk.chunk_id not in listed and batch_match(other):
                newer_than_list.append(other.chunk.chunk_id)
        return list(listed) + newer_than_list

    def _representative(self, chunk_id: str, other: str) -> tuple[SkipReason | None, str] | None:
        """(reason, representative) standing in for the older chunk `other`, None if it cannot stand in."""
        if other in self.in_progress:
            return None
        decision = self.decide(other) if other in self.by_id else self._stored_decision(other)
        reason, representative = (None, other) if decision is None else decision
        return None if representative == chunk_id else (reason, representative)

    def _stored_decision(self, chunk_id: str) -> Decision | None:
        if chunk_id not in self.stored:
            state = self.store.states([chunk_id]).get(chunk_id)
            decision: Decision | None = None
            if state is not None and state.representative_chunk_id and state.skip_reason:
                try:
                    decision = (SkipReason(state.skip_reason), state.representative_chunk_id)
                except ValueError:  # a skip reason this release does not know: the chunk counts as an original
                    decision = None
            self.stored[chunk_id] = decision
        return self.stored[chunk_id]

    def _exact(self, item: _Fresh) -> Decision | None:
        chunk_id, content_hash = item.chunk.chunk_id, item.chunk.content_hash
        listed = self.by_hash.get(content_hash, [])
        for other in self._older(chunk_id, listed, lambda f: f.chunk.content_hash == content_hash):
            found = self._representative(chunk_id, other)
            if found is not None:
                reason, representative = found
                # An exact copy of a near-duplicate is a near-duplicate of the same representative.
                return (reason or SkipReason.EXACT_DUPLICATE, representative)
        return None

    def _near(self, item: _Fresh) -> Decision | None:
        chunk_id = item.chunk.chunk_id
        entries = self.store.minhash_candidates(list(item.keys))
        for entry in entries:
            self.signatures.setdefault(entry.chunk_id, entry.signature)
        keys = set(item.keys)
        listed = [e.chunk_id for e in entries]
        for other in self._older(chunk_id, listed, lambda f: not keys.isdisjoint(f.keys)):
            if estimated_jaccard(item.signature, self.signatures[other]) < self.threshold:
                continue
            found = self._representative(chunk_id, other)
            if found is None:
                continue
            reason, representative = found
            if reason is None:
                return (SkipReason.NEAR_DUPLICATE, representative)
            # `other` copies an older original: that original stands in only if it is close enough itself.
            original = self.signatures.get(representative)
            if original is not None and estimated_jaccard(item.signature, original) >= self.threshold:
                return (SkipReason.NEAR_DUPLICATE, representative)
        return None


def find_duplicates(
    chunks: Sequence[Chunk], store: ExtractionStore, *, threshold: float = LSH_THRESHOLD
) -> dict[str, tuple[SkipReason, str]]:
    """chunk_id -> (EXACT_DUPLICATE or NEAR_DUPLICATE, representative chunk_id) for the chunks that repeat
    an older one; originals are absent. Records every chunk's signature and band keys in the store."""
    if not chunks:
        return {}
    deduper = _Deduper(chunks, store, threshold)
    found = deduper.run()
    store.put_minhashes(
        [(MinHashEntry(f.chunk.chunk_id, f.chunk.content_hash, f.signature), list(f.keys)) for f in deduper.fresh]
    )
    return found
