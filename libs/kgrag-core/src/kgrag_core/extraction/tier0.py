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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from kgrag_core.answering.quotes import normalise_for_quote
from kgrag_core.documents import Chunk
from kgrag_core.extraction.model import SkipReason
from kgrag_core.extraction.records import ChunkExtractionState, MinHashEntry
from kgrag_core.extraction.records_text import record_lines

if TYPE_CHECKING:
    from datasketch import MinHash

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
    r"|\b(click here to|to|you can|you may) unsubscribe\b|\bunsubscribe (here|at|from (this|these|our|all))\b"
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


# datasketch is imported where it is used: importing the package loads scipy (for MinHashLSH's parameter
# search), which cost every `kgrag` command, `--help` included, over two seconds.


@lru_cache(maxsize=1)
def _template() -> MinHash:
    from datasketch import MinHash

    # Building the permutations is the costly part of a MinHash; every signature shares one set.
    return MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME)


@lru_cache(maxsize=1)
def _hashranges() -> tuple[tuple[int, int], ...]:
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
    return tuple((int(start), int(end)) for start, end in lsh.hashranges)


def minhash_signature(text: str) -> tuple[int, ...]:
    """NUM_PERM MinHash values over the word 3-shingles of the normalised text."""
    minhash = _template().copy()
    minhash.update_batch(_shingles(text))
    return tuple(int(v) for v in minhash.hashvalues)


def _minhash(signature: Sequence[int]) -> MinHash:
    from datasketch import MinHash

    template = _template()
    return MinHash(
        seed=SEED,
        hashvalues=list(signature),
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


class DuplicateIndex(Protocol):
    """The part of `ports.ExtractionStore` duplicate detection reads and writes (any ExtractionStore is one)."""

    def chunks_with_hash(
        self, content_hashes: Sequence[str], acl_class_id: str | None = None
    ) -> dict[str, list[str]]: ...

    def minhash_candidates(
        self, band_keys: Sequence[str], exclude_doc_id: str | None = None, acl_class_id: str | None = None
    ) -> list[MinHashEntry]: ...

    def put_minhashes(self, entries: Sequence[tuple[MinHashEntry, Sequence[str]]]) -> None: ...

    def states(self, chunk_ids: Sequence[str]) -> dict[str, ChunkExtractionState]: ...


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

    def __init__(self, chunks: Sequence[Chunk], store: DuplicateIndex, threshold: float, acl_class_id: str) -> None:
        self.threshold = threshold
        self.fresh = [
            _Fresh(c, sig, tuple(band_keys(sig))) for c, sig in ((c, minhash_signature(c.text)) for c in chunks)
        ]
        self.by_id = {f.chunk.chunk_id: f for f in self.fresh}
        self.position = {f.chunk.chunk_id: i for i, f in enumerate(self.fresh)}
        self.batch_by_hash: dict[str, list[str]] = {}
        self.batch_by_key: dict[str, list[str]] = {}
        for f in self.fresh:
            self.batch_by_hash.setdefault(f.chunk.content_hash, []).append(f.chunk.chunk_id)
            for key in f.keys:
                self.batch_by_key.setdefault(key, []).append(f.chunk.chunk_id)
        # Three reads for the whole batch, not one per chunk: a stored entry's band keys are recomputed from
        # its signature (they are a function of it), which tells which batch chunks it is a candidate for.
        self.by_hash = store.chunks_with_hash(sorted(self.batch_by_hash), acl_class_id=acl_class_id)
        entries = store.minhash_candidates(sorted(self.batch_by_key), acl_class_id=acl_class_id)
        self.entries = [(e.chunk_id, frozenset(band_keys(e.signature))) for e in entries]
        self.signatures = {e.chunk_id: e.signature for e in entries}
        self.signatures.update({f.chunk.chunk_id: f.signature for f in self.fresh})
        stored_ids = {e.chunk_id for e in entries} | {i for ids in self.by_hash.values() for i in ids}
        wanted = sorted(stored_ids - set(self.by_id))
        self.stored = {chunk_id: _decision(state) for chunk_id, state in store.states(wanted).items()} if wanted else {}
        self.decisions: dict[str, Decision | None] = {}
        self.in_progress: set[str] = set()

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

    def _older(self, chunk_id: str, listed: Sequence[str], batch_ids: Sequence[str]) -> list[str]:
        """Chunks older than `chunk_id` among the store's list (oldest first) and the matching batch chunks."""
        if chunk_id in listed:
            return list(listed[: listed.index(chunk_id)])
        in_list = set(listed)
        limit = self.position[chunk_id]
        newer_than_list = sorted(
            {other for other in batch_ids if self.position[other] < limit and other not in in_list},
            key=self.position.__getitem__,
        )
        return list(listed) + newer_than_list

    def _representative(self, chunk_id: str, other: str) -> tuple[SkipReason | None, str] | None:
        """(reason, representative) standing in for the older chunk `other`, None if it cannot stand in."""
        if other in self.in_progress:
            return None
        decision = self.decide(other) if other in self.by_id else self.stored.get(other)
        reason, representative = (None, other) if decision is None else decision
        return None if representative == chunk_id else (reason, representative)

    def _exact(self, item: _Fresh) -> Decision | None:
        chunk_id, content_hash = item.chunk.chunk_id, item.chunk.content_hash
        listed = self.by_hash.get(content_hash, [])
        for other in self._older(chunk_id, listed, self.batch_by_hash[content_hash]):
            found = self._representative(chunk_id, other)
            if found is not None:
                reason, representative = found
                # An exact copy of a near-duplicate is a near-duplicate of the same representative.
                return (reason or SkipReason.EXACT_DUPLICATE, representative)
        return None

    def _near(self, item: _Fresh) -> Decision | None:
        chunk_id = item.chunk.chunk_id
        listed = [other for other, keys in self.entries if not keys.isdisjoint(item.keys)]
        batch_ids = [other for key in item.keys for other in self.batch_by_key[key]]
        for other in self._older(chunk_id, listed, batch_ids):
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


def _decision(state: ChunkExtractionState) -> Decision | None:
    if not (state.representative_chunk_id and state.skip_reason):
        return None
    try:
        return (SkipReason(state.skip_reason), state.representative_chunk_id)
    except ValueError:  # a skip reason this release does not know: the chunk counts as an original
        return None


def find_duplicates(
    chunks: Sequence[Chunk], store: DuplicateIndex, *, threshold: float = LSH_THRESHOLD
) -> dict[str, tuple[SkipReason, str]]:
    """chunk_id -> (EXACT_DUPLICATE or NEAR_DUPLICATE, representative chunk_id) for the chunks that repeat
    an older one; originals are absent. Records every chunk's signature and band keys in the store.

    Only a chunk of the same ACL class may stand in for another: a duplicate takes its representative's
    items (types a model or a record gave included), and what was read in one access scope must not shape
    what is extracted in another (docs/security.md, section 4)."""
    found: dict[str, tuple[SkipReason, str]] = {}
    by_class: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_class.setdefault(chunk.acl_class_id, []).append(chunk)
    for acl_class_id in sorted(by_class):
        deduper = _Deduper(by_class[acl_class_id], store, threshold, acl_class_id)
        found.update(deduper.run())
        store.put_minhashes(
            [(MinHashEntry(f.chunk.chunk_id, f.chunk.content_hash, f.signature), list(f.keys)) for f in deduper.fresh]
        )
    return found
