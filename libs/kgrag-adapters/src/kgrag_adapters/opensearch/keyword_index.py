"""`KeywordIndex` on an OpenSearch cluster through opensearch-py: one document per chunk in one index.

The distributed twin of `kgrag_adapters.tantivy.keyword_index.TantivyKeywordIndex`, with the same semantics:

- The same analysis: the index's `kgrag_english` analyzer mirrors tantivy's en_stem (alphanumeric runs,
  long tokens dropped, lowercase, Snowball English, no stop words). The template's `_meta` lists the few
  words the two engines stem differently.
- BM25 over text, title (boost 2) and breadcrumb (boost 1.5): one `term` query per (query term, field), summed.
  Both engines score with the same BM25, so rankings and scores agree (to float rounding) while every chunk
  has a title and a breadcrumb; for a chunk with an empty field they differ a little, as Lucene counts a
  field's statistics over the documents that have it and tantivy over all (see the template's `_meta`).
- User text never reaches a query parser. The index analyses it (`_analyze` with `field: text`, so exactly
  the chain the field was indexed with); the distinct terms, at most MAX_QUERY_TERMS, come back as `term`
  queries, so query syntax in the input is just text. `simple_query_string` with `flags: NONE` or
  `multi_match` would also be parser-safe, but they send one clause per token and cannot cap or deduplicate
  them: a long query ("word " * 5000) exceeds `indices.query.bool.max_clause_count` (1024) and the search
  fails. The price is one extra round trip per search.
- The caller's readable ACL classes are a `terms` filter of the same `bool` query: they restrict the
  candidates before scoring and top-k, so denied chunks never take a place, and they do not change scores.
- Hits are sorted by score, then chunk_id, on the server: ties are deterministic without fetching past the
  cut-off. Searches run as dfs_query_then_fetch, so an index with several shards scores with global term
  statistics (OpenSearch runs a one-shard search as query_then_fetch anyway, at no extra cost), and with a
  `preference` derived from the ACL scope, so repeated searches of one scope read the same shard copies.
- Writes return once searches see them: bulk requests use `refresh=wait_for`. That costs latency, not
  cluster work: each bulk request (up to _WRITE_CHUNK documents) waits for the next scheduled refresh, up to
  the index's refresh_interval (1 s), instead of forcing a refresh and a tiny segment per call. One caller's
  back-to-back writes wait about the full interval each (each starts just after the refresh that released
  the one before), so throughput comes from batching. (Past index.max_refresh_listeners, 1000 waiting
  requests per shard, OpenSearch forces a refresh.)

The index template is put from `schemas/opensearch/chunks-template.json` (reached through the `schema`
symlink next to this module, like the PostgreSQL migrations) and the index created from it on first use,
not in the constructor. An existing template of the same or a newer version is left alone. An existing index
must have the template's field types: an index created before the template, with dynamic mappings, would
analyse `acl_class_id` as text, and the ACL filter would no longer be an exact match.

Errors: connection errors and other request-level errors propagate unchanged (the runtime retries with
backoff); a document the cluster refused in a bulk response raises `KgragError(INDEX_WRITE_FAILED)`. The
other documents of the call are written; writes are idempotent (`_id` = chunk_id), so a retry is safe.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import time
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from opensearchpy import OpenSearch, helpers
from opensearchpy.exceptions import NotFoundError, RequestError

from kgrag_adapters.lifecycle import Closeable
from kgrag_adapters.tantivy.keyword_index import (
    _SEARCH_FIELDS,  # the embedded twin's field boosts, so both engines weigh fields alike
    MAX_LIMIT,
    MAX_QUERY_TERMS,
    check_limit,
)
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.filters import SearchFilters
from kgrag_core.search import KeywordDoc, RouteHit

__all__ = [
    "DEFAULT_INDEX",
    "MAX_LIMIT",
    "MAX_QUERY_TERMS",
    "TEMPLATE_FILE",
    "TEMPLATE_NAME",
    "OpenSearchKeywordIndex",
    "ensure_index",
    "load_template",
]

DEFAULT_INDEX = "kgrag-chunks"
TEMPLATE_NAME = "kgrag-chunks"
_TEMPLATE_FILE_NAME = "chunks-template.json"
# The template's one home is schemas/opensearch/ at the repository root; `schema/` next to this module is a
# relative symlink to it. The repository path itself is the fallback for an install that dropped the symlink.
_HERE = Path(__file__).resolve().parent
TEMPLATE_FILE = _HERE / "schema" / _TEMPLATE_FILE_NAME
# <repo>/libs/kgrag-adapters/src/kgrag_adapters/opensearch: the repository is the 5th parent (if there is one).
_TEMPLATE_CANDIDATES = (
    TEMPLATE_FILE,
    *(root / "schemas" / "opensearch" / _TEMPLATE_FILE_NAME for root in _HERE.parents[4:5]),
)

# Documents per bulk request: each request waits for one refresh (refresh=wait_for).
_WRITE_CHUNK = 1000
_WRITE_CHUNK_BYTES = 16 * 1024 * 1024
# Page size of ids_for_doc (search_after on chunk_id); below index.max_result_window (10,000).
_PAGE = 1000
# Characters of query text per _analyze request. A token takes at least two characters (itself and a
# separator), so a piece yields at most ~4,000 tokens, below index.analyze.max_token_count (10,000).
_ANALYZE_CHARS = 8000
# The field whose analyzer turns query text into terms (all searched fields share it).
_ANALYZED_FIELD = "text"


def load_template(path: Path | None = None) -> dict[str, Any]:
    """The index template (`schemas/opensearch/chunks-template.json`), as the body of PUT _index_template."""
    if path is None:
        path = next((p for p in _TEMPLATE_CANDIDATES if p.is_file()), None)
        if path is None:
            # A broken install (e.g. the symlink was not kept), not "no template".
            tried = " or ".join(str(p) for p in _TEMPLATE_CANDIDATES)
            raise FileNotFoundError(f"OpenSearch index template not found at {tried}")
    template = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(template, dict) or not isinstance(template.get("version"), int):
        raise ValueError(f"{path}: not an index template with an integer `version`")
    return template


def ensure_index(client: OpenSearch, index: str, template: Mapping[str, Any] | None = None) -> None:
    """Put the template unless the cluster has it (same or newer version); create `index` if missing; check it.

    A missing index is created with no body, so the template (or an operator's higher-priority template for
    the same names) decides its settings; its name must therefore match the template's `index_patterns`.
    Raises KgragError(CONFIGURATION_INVALID) when the name does not match or the index lacks the template's
    field types. Safe to run concurrently from several processes.
    """
    if template is None:
        template = load_template()
    _put_template(client, template)
    if not client.indices.exists(index=index):
        patterns = [str(p) for p in template["index_patterns"]]
        if not any(fnmatch.fnmatchcase(index, p) for p in patterns):
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                f"OpenSearch index {index!r} does not exist and its name does not match the kgrag template's "
                f"patterns {patterns}, so it would be created without the kgrag mapping",
                hint=f"Use an index name matching {patterns}, or create the index from "
                "schemas/opensearch/chunks-template.json first.",
            )
        try:
            client.indices.create(index=index)
        except RequestError as exc:
            # Another process created it since the check: then validate theirs below.
            if exc.error != "resource_already_exists_exception":
                raise
    _check_mapping(client, index, template)


# How often a purge retries the merge while a retention lease still holds soft deletes.
_PURGE_RETRY_S = 2.0


class OpenSearchKeywordIndex(Closeable):
    """BM25 index of chunks in the OpenSearch index (or alias) `index`.

    The client passed in stays the caller's: `close()` closes only a client that `connect()` opened.
    """

    def __init__(self, client: OpenSearch, index: str = DEFAULT_INDEX, *, purge_wait_s: float = 0.0) -> None:
        if not index:
            raise ValueError("index must not be empty")
        if purge_wait_s < 0:
            raise ValueError(f"purge_wait_s must not be negative, got {purge_wait_s}")
        self._purge_wait_s = purge_wait_s
        self._client: OpenSearch | None = client
        self._index = index
        self._owns_client = False
        self._ready = False

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        user: str | None = None,
        password: str | None = None,
        index: str = DEFAULT_INDEX,
        ca_certs: str | None = None,
        purge_wait_s: float = 0.0,
    ) -> Self:
        """An index on the cluster at `url` (http:// or https://), with basic auth when `user` is given.

        TLS certificates are always verified (against `ca_certs`, default certifi's bundle), so the client
        never warns about an unverified connection. The client does not retry: a connection error reaches
        the caller at once, whose retry policy (with backoff) decides. Nothing is sent before first use.
        """
        if (user is None) != (password is None):
            raise ValueError("pass both user and password, or neither")
        client = OpenSearch(
            hosts=[url],
            http_auth=(user, password) if user is not None else None,
            verify_certs=True,
            ca_certs=ca_certs,
            max_retries=0,
            retry_on_timeout=False,
            timeout=30,
        )
        try:
            index_ = cls(client, index, purge_wait_s=purge_wait_s)
        except BaseException:
            client.close()
            raise
        index_._owns_client = True
        return index_

    @property
    def index(self) -> str:
        return self._index

    # --- KeywordIndex ------------------------------------------------------------------------------

    def upsert(self, docs: Sequence[KeywordDoc]) -> None:
        # Keyed by chunk_id, so a chunk given twice is written once, with its last version.
        latest = {doc.chunk_id: doc for doc in docs}
        if not latest:
            return
        actions = (
            {"_op_type": "index", "_index": self._index, "_id": doc.chunk_id, "_source": _source(doc)}
            for doc in latest.values()
        )
        self._bulk(actions, len(latest), "upsert")

    def delete(self, chunk_ids: Sequence[str]) -> None:
        _reject_bare_string(chunk_ids, "chunk_ids")
        unique = sorted(set(chunk_ids))
        if not unique:
            return
        actions = ({"_op_type": "delete", "_index": self._index, "_id": chunk_id} for chunk_id in unique)
        self._bulk(actions, len(unique), "delete")

    # --- Purgeable (ADR 0008) -----------------------------------------------------------------------

    @property
    def purge_needs_rewrite(self) -> bool:
        return False

    def rewrite_scope(self) -> list[str]:
        return []  # the purge needs no rewrite

    def purge_deleted(self) -> tuple[bool, str]:
        """Expunge deleted documents from the index's segments now (a merge of only the segments that
        hold deletions), instead of waiting for the merge policy.

        A merge keeps the soft deletes that a shard's retention lease still covers (for peer recovery): on
        an active shard the lease retains every operation above the checkpoint it last synced, and it is
        synced in the background about every 30 s — not something an index setting shortens (measured:
        `index.soft_deletes.retention_lease.period` 0s changes nothing; that period only expires the
        leases of copies that left). So while some are left, the merge is retried every
        `_PURGE_RETRY_S` for up to `purge_wait_s`; the result says `purged` only when none is left, and
        otherwise how many a later merge drops.
        """
        client = self._live()
        # By default a segment is expunged only above 10 % deleted documents; a compliance deletion needs
        # every deleted chunk gone, so the threshold is 0 (a dynamic index setting, idempotent).
        client.indices.put_settings(index=self._index, body={"index.merge.policy.expunge_deletes_allowed": 0})
        deadline = time.monotonic() + self._purge_wait_s
        while True:
            client.indices.forcemerge(index=self._index, params={"only_expunge_deletes": "true"})
            left = self.deleted_documents()
            if not left:
                return True, "forcemerge only_expunge_deletes: no deleted document left"
            if time.monotonic() + _PURGE_RETRY_S > deadline:
                return False, (
                    f"forcemerge only_expunge_deletes ran; {left} soft-deleted document(s) still retained by the"
                    f" shard's retention lease after {self._purge_wait_s:g} s, dropped by a later merge"
                )
            time.sleep(_PURGE_RETRY_S)

    def deleted_documents(self) -> int:
        """Deleted documents still held in the index's segments (0 after a purge)."""
        self._live().indices.refresh(index=self._index)
        stats = self._live().indices.stats(index=self._index, metric="docs")
        return int(stats["_all"]["primaries"]["docs"]["deleted"])

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
        allowed = sorted(set(acl_class_ids))
        body = {
            "size": limit,
            "query": {
                "bool": {
                    "must": [
                        {
                            "bool": {
                                "should": [
                                    {"term": {field: {"value": term, "boost": boost}}}
                                    for term in terms
                                    for field, boost in _SEARCH_FIELDS.items()
                                ],
                                "minimum_should_match": 1,
                            }
                        }
                    ],
                    # Filter clauses: restrict the candidates before scoring and top-k, add no score.
                    "filter": [{"terms": {"acl_class_id": allowed}}, *_filter_clauses(filters)],
                }
            },
            "sort": [{"_score": {"order": "desc"}}, {"chunk_id": {"order": "asc"}}],
            "track_scores": True,  # hit scores are reported when the sort has more than _score
            "track_total_hits": False,
            "_source": False,
        }
        response = self._live().search(
            index=self._index,
            body=body,
            search_type="dfs_query_then_fetch",
            preference=_preference(allowed),
        )
        hits = _hits(response)
        return [RouteHit(_chunk_id_of(hit), _score_of(hit), rank) for rank, hit in enumerate(hits, 1)]

    def count(self) -> int:
        response = self._live().count(index=self._index)
        return int(response["count"])

    def ids_for_doc(self, doc_id: str) -> list[str]:
        client = self._live()
        chunk_ids: list[str] = []
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": _PAGE,
                "query": {"bool": {"filter": [{"terms": {"doc_id": [doc_id]}}]}},
                "sort": [{"chunk_id": {"order": "asc"}}],
                "track_total_hits": False,
                "_source": False,
            }
            if after is not None:
                body["search_after"] = after
            hits = _hits(client.search(index=self._index, body=body))
            chunk_ids.extend(_chunk_id_of(hit) for hit in hits)
            if len(hits) < _PAGE:
                return chunk_ids
            after = hits[-1]["sort"]

    # --- query analysis ----------------------------------------------------------------------------

    def query_terms(self, query: str) -> list[str]:
        """The distinct analysed terms of a user query, in first-seen order, at most MAX_QUERY_TERMS."""
        client = self._live()
        terms: dict[str, None] = {}
        for piece in _pieces(query, _ANALYZE_CHARS):
            response = client.indices.analyze(index=self._index, body={"field": _ANALYZED_FIELD, "text": piece})
            for token in response.get("tokens", []):
                terms.setdefault(str(token["token"]))
                if len(terms) == MAX_QUERY_TERMS:
                    return list(terms)
        return list(terms)

    # --- lifecycle ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop using the client; close it if `connect()` opened it. Writes are durable on return. Safe twice."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            client.close()

    # --- helpers -----------------------------------------------------------------------------------

    def _live(self) -> OpenSearch:
        client = self._client
        if client is None:
            raise RuntimeError(f"keyword index on OpenSearch index {self._index!r} is closed")
        if not self._ready:
            ensure_index(client, self._index)
            self._ready = True
        return client

    def _bulk(self, actions: Iterable[Mapping[str, Any]], total: int, what: str) -> None:
        client = self._live()
        failed: list[Mapping[str, Any]] = []
        for ok, item in helpers.streaming_bulk(
            client,
            actions,
            chunk_size=_WRITE_CHUNK,
            max_chunk_bytes=_WRITE_CHUNK_BYTES,
            raise_on_error=False,  # item failures are collected below; request failures still raise
            raise_on_exception=True,
            max_retries=0,
            refresh="wait_for",
        ):
            if ok:
                continue
            ((op_type, result),) = item.items()
            if op_type == "delete" and result.get("status") == 404:
                continue  # deleting a chunk that is not there is fine
            failed.append(result)
        if failed:
            shown = ", ".join(_describe_failure(result) for result in failed[:5])
            more = f" (and {len(failed) - 5} more)" if len(failed) > 5 else ""
            raise KgragError(
                ErrorCode.INDEX_WRITE_FAILED,
                f"OpenSearch refused {len(failed)} of {total} keyword index {what}(s) in index "
                f"{self._index!r}: {shown}{more}",
                hint="The other documents of the call were written. Writes are idempotent: retry the call "
                "once the cause (see the OpenSearch errors) is fixed.",
            )


# --- module helpers ------------------------------------------------------------------------------------


def _put_template(client: OpenSearch, template: Mapping[str, Any]) -> None:
    version = int(template["version"])
    try:
        found = client.indices.get_index_template(name=TEMPLATE_NAME)
    except NotFoundError:
        found = {"index_templates": []}
    existing = [t["index_template"].get("version") for t in found.get("index_templates", [])]
    if existing and all(isinstance(v, int) and v >= version for v in existing):
        return  # ours, or a newer deployment's: putting it again would only churn the cluster state
    client.indices.put_index_template(name=TEMPLATE_NAME, body=dict(template))


def _check_mapping(client: OpenSearch, index: str, template: Mapping[str, Any]) -> None:
    expected = template["template"]["mappings"]
    # Keyed by concrete index: an alias may stand for several.
    for name, body in client.indices.get_mapping(index=index).items():
        mappings = body.get("mappings", {})
        problems: list[str] = []
        if mappings.get("dynamic") != expected["dynamic"]:
            problems.append(f"dynamic is {mappings.get('dynamic')!r}, expected {expected['dynamic']!r}")
        properties = mappings.get("properties", {})
        for field, spec in expected["properties"].items():
            actual = properties.get(field)
            if actual is None:
                problems.append(f"field {field!r} is missing")
            elif any(actual.get(key) != value for key, value in spec.items()):
                problems.append(f"field {field!r} is {actual}, expected {spec}")
        if problems:
            raise KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                f"OpenSearch index {name!r} does not have the kgrag chunk mapping: {'; '.join(problems)}",
                hint="Create the index from schemas/opensearch/chunks-template.json (delete this one and "
                "re-project the chunks from PostgreSQL, or reindex into a new index and move the alias).",
            )


def _source(doc: KeywordDoc) -> dict[str, str]:
    source = {
        "chunk_id": doc.chunk_id,
        "doc_id": doc.doc_id,
        "acl_class_id": doc.acl_class_id,
        "source": doc.source,
        "title": doc.title,
        "breadcrumb": doc.breadcrumb,
        "text": doc.text,
    }
    if doc.doc_time is not None:
        source["doc_time"] = doc.doc_time.isoformat()
    return source


def _filter_clauses(filters: SearchFilters | None) -> list[dict[str, Any]]:
    """SearchFilters as filter clauses: sources a `terms`, the document date a `range` (a chunk without a
    `doc_time` matches no range)."""
    if filters is None:
        return []
    clauses: list[dict[str, Any]] = []
    if filters.sources:
        clauses.append({"terms": {"source": list(filters.sources)}})
    if filters.has_dates:
        lower, upper = filters.time_bounds()
        bounds: dict[str, str] = {}
        if lower is not None:
            bounds["gte"] = lower.isoformat()
        if upper is not None:
            bounds["lt"] = upper.isoformat()
        clauses.append({"range": {"doc_time": bounds}})
    return clauses


def _pieces(text: str, size: int) -> Iterator[str]:
    """`text` in pieces of at most `size` characters, cut after a separator so no token spans two pieces.

    Punctuation, spaces and control characters are never letters or numbers, so the tokenizer splits there
    too. A run of `size` characters without one (not text anyone types) is cut where the piece is full.
    """
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            end = next((i for i in range(end, start, -1) if _is_separator(text[i - 1])), end)
        piece = text[start:end]
        if not piece.isspace():
            yield piece
        start = end


def _is_separator(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in "PZ" or category == "Cc"


def _preference(acl_class_ids: Sequence[str]) -> str:
    # Any string not starting with "_" routes a search to the same shard copies while the cluster is stable.
    return hashlib.sha256("\n".join(acl_class_ids).encode("utf-8")).hexdigest()[:16]


def _hits(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    hits = response["hits"]["hits"]
    if not isinstance(hits, list):
        raise RuntimeError(f"unexpected OpenSearch search response: hits is {type(hits).__name__}")
    return hits


def _chunk_id_of(hit: Mapping[str, Any]) -> str:
    chunk_id = hit.get("_id")
    if not isinstance(chunk_id, str):
        raise RuntimeError("keyword index hit without an _id: the response is corrupt")
    return chunk_id


def _score_of(hit: Mapping[str, Any]) -> float:
    score = hit.get("_score")
    if not isinstance(score, (int, float)):
        raise RuntimeError("keyword index hit without a score: the search did not track scores")
    return float(score)


def _describe_failure(result: Mapping[str, Any]) -> str:
    error = result.get("error")
    if isinstance(error, Mapping):
        error = f"{error.get('type')}: {error.get('reason')}"
    return f"{result.get('_id')!r} (HTTP {result.get('status')}, {error})"


def _reject_bare_string(values: Sequence[str], name: str) -> None:
    # A str is a Sequence[str]; iterating it would silently use single characters as IDs.
    if isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of strings, not a string")
