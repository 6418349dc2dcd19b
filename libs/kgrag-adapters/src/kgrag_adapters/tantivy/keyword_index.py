"""`KeywordIndex` on tantivy: BM25 over chunk text, title and breadcrumb in a local directory.

User text never reaches tantivy's query parser: it is analysed with the same chain as the indexed
fields and turned into term queries, so query syntax in the input is just text. The caller's readable
ACL classes are a required clause of the same query, so denied chunks never take a place in the top-k.

A writer (and its directory lock) is held only for the duration of one upsert/delete, which commits
and reloads the searcher before returning. Other processes may open the same path for reading.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import tantivy

from kgrag_adapters.lifecycle import Closeable
from kgrag_core.filters import SearchFilters
from kgrag_core.retrieval.ties import top_k_breaking_ties_by_id
from kgrag_core.search import KeywordDoc, RouteHit

MAX_LIMIT = 1000
# Ties at the cut-off are resolved by fetching further; this bounds that extra work.
_MAX_FETCH = 4 * MAX_LIMIT
# Bounds the work one query can cause; later terms of a very long query are ignored.
MAX_QUERY_TERMS = 64
_WRITER_HEAP_BYTES = 50_000_000
_WRITER_THREADS = 1

_RAW_FIELDS = ("chunk_id", "doc_id", "acl_class_id", "source")
_TEXT_TOKENIZER = "en_stem"
_DATE_FIELD = "doc_time"
# tantivy keeps dates as i64 nanoseconds since 1970: about 1677-09-22 to 2262-04-11. A document dated
# outside is indexed at the nearest end; the searcher's hydration rechecks the real date (filters.admits).
_EARLIEST = datetime(1677, 9, 22, tzinfo=UTC)
_LATEST = datetime(2262, 4, 11, tzinfo=UTC)


def _representable(moment: datetime) -> datetime:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return min(max(aware, _EARLIEST), _LATEST)


# Field -> boost. A term in a title says more about the chunk than the same term in its body.
_SEARCH_FIELDS = {"text": 1.0, "title": 2.0, "breadcrumb": 1.5}


def _build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in _RAW_FIELDS:
        # Exact-match keys: no frequencies or positions needed.
        builder.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    for name in _SEARCH_FIELDS:
        # The text lives in the document store; the index only needs to find and score it.
        builder.add_text_field(name, stored=False, tokenizer_name=_TEXT_TOKENIZER)
    # The document date, for SearchFilters' range (a fast field: the range runs on its column).
    builder.add_date_field(_DATE_FIELD, indexed=True, fast=True)
    return builder.build()


def _lacks_date_field(path: Path) -> bool:
    """Whether `path` holds an index written before the document date was indexed (no `doc_time` field)."""
    meta = path / "meta.json"
    if not meta.is_file():
        return False
    fields = {f.get("name") for f in json.loads(meta.read_text(encoding="utf-8")).get("schema", [])}
    return _DATE_FIELD not in fields


def _build_query_analyzer() -> tantivy.TextAnalyzer:
    # Must mirror tantivy's built-in "en_stem" analyzer exactly, or query terms miss indexed terms.
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


class TantivyKeywordIndex(Closeable):
    """BM25 index of chunks in a tantivy index directory at `path` (created if missing)."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._path.mkdir(parents=True, exist_ok=True)
        self._schema = _build_schema()
        self._analyzer = _build_query_analyzer()
        # An index from before the date field cannot be reopened with today's schema. It is a projection:
        # it is emptied here and `needs_reprojection` tells the wiring to rewrite it from PostgreSQL.
        self.needs_reprojection = _lacks_date_field(self._path)
        if self.needs_reprojection:
            for entry in self._path.iterdir():
                if entry.is_file():
                    entry.unlink()
        # reuse=True opens an existing index and raises if its schema differs from ours.
        self._index: tantivy.Index | None = tantivy.Index(self._schema, path=str(self._path), reuse=True)
        # tantivy allows one IndexWriter per directory (a second one fails with LockBusy); searchers are
        # snapshots that a commit and reload never disturb, so only writers queue here.
        self._writer_lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path

    # --- KeywordIndex ------------------------------------------------------------------------------

    def upsert(self, docs: Sequence[KeywordDoc]) -> None:
        if not docs:
            return

        def apply(writer: tantivy.IndexWriter) -> None:
            for doc in docs:
                # A delete applies only to documents added before it, so this replaces any older copy,
                # including one added earlier in this same batch.
                writer.delete_documents_by_term("chunk_id", doc.chunk_id)
                fields: dict[str, object] = {
                    "chunk_id": doc.chunk_id,
                    "doc_id": doc.doc_id,
                    "acl_class_id": doc.acl_class_id,
                    "source": doc.source,
                    "title": doc.title,
                    "breadcrumb": doc.breadcrumb,
                    "text": doc.text,
                }
                if doc.doc_time is not None:
                    fields[_DATE_FIELD] = _representable(doc.doc_time)
                writer.add_document(tantivy.Document(**fields))

        self._write(apply)

    def delete(self, chunk_ids: Sequence[str]) -> None:
        _reject_bare_string(chunk_ids, "chunk_ids")
        unique = sorted(set(chunk_ids))
        if not unique:
            return

        def apply(writer: tantivy.IndexWriter) -> None:
            for chunk_id in unique:
                writer.delete_documents_by_term("chunk_id", chunk_id)

        self._write(apply)

    def search(
        self, query: str, acl_class_ids: Sequence[str], limit: int, *, filters: SearchFilters | None = None
    ) -> list[RouteHit]:
        check_limit(limit)
        _reject_bare_string(acl_class_ids, "acl_class_ids")
        if not acl_class_ids:
            return []
        terms = self.query_terms(query)
        if not terms:
            return []
        index = self._live()
        matches = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, self._field_term(field, term, boost))
                for term in terms
                for field, boost in _SEARCH_FIELDS.items()
            ]
        )
        # Constant score 0: the ACL clause restricts the candidates without shifting BM25 scores.
        allowed = tantivy.Query.const_score_query(
            tantivy.Query.term_set_query(self._schema, "acl_class_id", sorted(set(acl_class_ids))), 0.0
        )
        clauses = [(tantivy.Occur.Must, matches), (tantivy.Occur.Must, allowed)]
        # Source and date restrict the candidates like the ACL clause: required, constant score 0.
        clauses += [
            (tantivy.Occur.Must, tantivy.Query.const_score_query(q, 0.0)) for q in self._filter_queries(filters)
        ]
        full = tantivy.Query.boolean_query(clauses)
        searcher = index.searcher()

        def fetch(size: int) -> list[tuple[str, float]]:
            hits = searcher.search(full, limit=size, count=False).hits
            return [(_stored_chunk_id(searcher, address), float(score)) for score, address in hits]

        return top_k_breaking_ties_by_id(fetch, limit, _MAX_FETCH)

    def count(self) -> int:
        return self._live().searcher().num_docs

    def _filter_queries(self, filters: SearchFilters | None) -> list[tantivy.Query]:
        if filters is None:
            return []
        out: list[tantivy.Query] = []
        if filters.sources:
            out.append(tantivy.Query.term_set_query(self._schema, "source", list(filters.sources)))
        if filters.has_dates:
            lower, upper = filters.time_bounds()
            # Bounds past what tantivy stores are clamped like the dates it stores (`_representable`); the
            # searcher's hydration rechecks the real dates, so a clamped end may only admit too much here.
            # The lower end is always given (every stored date is at or after _EARLIEST): a range query
            # needs one, and a chunk without a date must match none.
            low = _representable(lower) if lower is not None else _EARLIEST
            high = _representable(upper) if upper is not None and upper < _LATEST else None
            out.append(
                tantivy.Query.range_query(
                    self._schema,
                    _DATE_FIELD,
                    tantivy.FieldType.Date,
                    low,
                    high,
                    include_lower=True,
                    # Exclusive as `time_bounds` gives it, but inclusive when unbounded (tantivy's rule) or
                    # clamped to _EARLIEST (documents dated before it are stored there).
                    include_upper=high is None or high == _EARLIEST,
                )
            )
        return out

    def ids_for_doc(self, doc_id: str) -> list[str]:
        searcher = self._live().searcher()
        total = searcher.num_docs
        if total == 0:
            return []  # tantivy panics on a search limit of 0
        by_doc = tantivy.Query.term_query(self._schema, "doc_id", doc_id)
        hits = searcher.search(by_doc, limit=total, count=False).hits
        return sorted(_stored_chunk_id(searcher, address) for _, address in hits)

    # --- query analysis ----------------------------------------------------------------------------

    def query_terms(self, query: str) -> list[str]:
        """The distinct analysed terms of a user query, in first-seen order, at most MAX_QUERY_TERMS."""
        unique = dict.fromkeys(self._analyzer.analyze(query))
        return list(unique)[:MAX_QUERY_TERMS]

    def _field_term(self, field: str, term: str, boost: float) -> tantivy.Query:
        term_query = tantivy.Query.term_query(self._schema, field, term)
        return term_query if boost == 1.0 else tantivy.Query.boost_query(term_query, boost)

    # --- lifecycle ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the index. No writer outlives a call, so there is nothing to flush. Safe to call twice."""
        self._index = None

    # --- helpers -----------------------------------------------------------------------------------

    # --- Purgeable (ADR 0008) -----------------------------------------------------------------------

    @property
    def purge_needs_rewrite(self) -> bool:
        # A deleted document's terms stay in its segment's term dictionary (doc_freq still counts them)
        # until the segment goes; tantivy drops a segment with no live document at commit, so rewriting
        # the live chunks of the segments holding deletions (the caller re-projects them) empties them.
        return True

    def rewrite_scope(self) -> list[str] | None:
        """The documents with a live chunk in a segment that holds deleted chunks (of this deletion, or
        replaced copies of earlier versions), read from the index's own segment list (`meta.json`: each
        segment's `max_doc` and deleted count). None when the searcher's segments do not line up with it,
        so the caller falls back to rewriting everything rather than guessing."""
        index = self._live()
        with self._writer_lock:  # no commit between reading the segment list and the snapshot
            index.reload()
            searcher = index.searcher()
            segments = json.loads((self._path / "meta.json").read_text(encoding="utf-8"))["segments"]
            if searcher.num_segments != len(segments):
                return None
            deleted = [int((seg.get("deletes") or {}).get("num_deleted_docs", 0)) for seg in segments]
            dirty = {i for i, n in enumerate(deleted) if n > 0}
            if not dirty:
                return []
            total = searcher.num_docs
            hits = searcher.search(tantivy.Query.all_query(), limit=total, count=False).hits if total else []
            live = Counter(address.segment_ord for _, address in hits)
            expected = {i: int(seg["max_doc"]) - deleted[i] for i, seg in enumerate(segments)}
            if live != Counter({i: n for i, n in expected.items() if n > 0}):
                return None
            return sorted(
                {_stored_field(searcher, address, "doc_id") for _, address in hits if address.segment_ord in dirty}
            )

    def purge_deleted(self) -> tuple[bool, str]:
        index = self._live()
        with self._writer_lock:  # one writer per index: never beside an ingest's
            writer = index.writer(heap_size=_WRITER_HEAP_BYTES, num_threads=_WRITER_THREADS)
            try:
                writer.garbage_collect_files()
            finally:
                writer.wait_merging_threads()
            index.reload()
        return True, f"segments rewritten and unused files removed ({index.searcher().num_segments} segment(s) left)"

    def doc_freq(self, term: str) -> int:
        """How many indexed chunks (deleted ones included, until purged) hold `term` in their text."""
        return int(self._live().searcher().doc_freq("text", term))

    def _live(self) -> tantivy.Index:
        if self._index is None:
            raise RuntimeError(f"keyword index at {self._path} is closed")
        return self._index

    def _write(self, apply: Callable[[tantivy.IndexWriter], None]) -> None:
        index = self._live()
        with self._writer_lock:
            writer = index.writer(heap_size=_WRITER_HEAP_BYTES, num_threads=_WRITER_THREADS)
            try:
                apply(writer)
                writer.commit()
            finally:
                # Consumes the writer and releases the directory lock; uncommitted operations are dropped.
                writer.wait_merging_threads()
            index.reload()


def check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")


def _reject_bare_string(values: Sequence[str], name: str) -> None:
    # A str is a Sequence[str]; iterating it would silently use single characters as IDs.
    if isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of strings, not a string")


def _stored_chunk_id(searcher: tantivy.Searcher, address: tantivy.DocAddress) -> str:
    return _stored_field(searcher, address, "chunk_id")


def _stored_field(searcher: tantivy.Searcher, address: tantivy.DocAddress, field: str) -> str:
    value = searcher.doc(address).get_first(field)
    if not isinstance(value, str):
        raise RuntimeError(f"keyword index document without a {field}: the index is corrupt")
    return value
