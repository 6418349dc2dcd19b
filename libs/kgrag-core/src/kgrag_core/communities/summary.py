"""Abstractive community summaries (with an LLM): written from a caller's view, verified like answers, cached
per evidence scope (ADR 0009, decisions 4 and 5).

The scope of a summary is the sorted set of ACL classes of the chunks its view quoted. It is cached under
(community content hash, scope, model, prompt version) and served only to a caller whose readable classes
cover the whole scope. A stale community's cached summaries are never served (fail closed until the
community is rebuilt): its extractive view, which reads live facts, is what the caller gets instead.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kgrag_core.answering.fallback import FALLBACK_REASONS, answer_or_fallback
from kgrag_core.answering.model import Answer, AnswerMode, AnswerSentence
from kgrag_core.answering.verification import verify_answer
from kgrag_core.chunking import estimate_tokens
from kgrag_core.communities.model import Community
from kgrag_core.communities.view import CommunityPoint, CommunityView, ViewSettings
from kgrag_core.ports import ChatModel
from kgrag_core.search import SearchHit

if TYPE_CHECKING:  # a search never loads the extraction package
    from kgrag_core.extraction.rerun import CostModel

PROMPT_VERSION = "community-summary-1"
EXTRACTIVE_NOTICE = "The community's key sentences, quoted as written."
# Why a summary is the extractive one although a model is configured (besides the model's own failures,
# `answering.fallback.FALLBACK_REASONS`): nothing the model wrote was backed by its quotes, or the community
# is stale (its summaries are not served or written until it is rebuilt).
SUMMARY_UNSUPPORTED = "summary_unsupported"
COMMUNITY_STALE = "community_stale"


@dataclass(frozen=True, slots=True)
class SummaryKey:
    community_id: str
    content_hash: str
    scope: tuple[str, ...]  # sorted ACL class ids of the evidence the summary used
    model_id: str
    prompt_version: str = PROMPT_VERSION
    # A digest of the caller's view the summary was written from (its title, members and quotes: what the
    # prompt holds). Two callers' views with one evidence scope can still differ (a member only one of
    # them sees names the title), so a cached summary reaches only a caller whose view is the same.
    view_digest: str = ""

    def cache_key(self) -> str:
        parts = [self.content_hash, ",".join(self.scope), self.model_id, self.prompt_version, self.view_digest]
        raw = "\x1f".join(parts)
        return f"community-summary:{self.community_id}:{hashlib.sha256(raw.encode()).hexdigest()[:32]}"


def summary_key(community: Community, scope: Collection[str], model_id: str) -> SummaryKey:
    return SummaryKey(community.community_id, community.content_hash, tuple(sorted(set(scope))), model_id)


def may_serve(key: SummaryKey, community: Community, readable_classes: Collection[str] | None) -> bool:
    """Whether a cached summary under `key` may reach this caller: the community is not stale, its content
    is what the summary was written from, and the caller reads every class of its evidence (None: admin)."""
    if community.stale or community.content_hash != key.content_hash:
        return False
    return readable_classes is None or set(key.scope) <= set(readable_classes)


def extractive_summary(view: CommunityView) -> Answer:
    """The view's key sentences as an answer (each cites its own quote): the summary without a model."""
    sentences = tuple(AnswerSentence(p.text, (p.citation_id,)) for p in view.points)
    return Answer(
        f"Summarise {view.title}.",
        AnswerMode.EXTRACTIVE if sentences else AnswerMode.ABSTAINED,
        sentences,
        view.citations,
        EXTRACTIVE_NOTICE,
        "MEDIUM" if sentences else "LOW",
        evidence_chunk_ids=tuple(dict.fromkeys(c.chunk_id for c in view.citations)),
    )


def abstractive_summary(view: CommunityView, hits: Sequence[SearchHit], model: ChatModel) -> Answer:
    """The model's summary of the view's evidence `hits` (the chunks its quotes come from, all readable by the
    caller), every sentence checked against its cited quotes; the extractive summary, flagged with the
    reason, when the model fails or replies with no answer."""
    members = ", ".join(m.name for m in view.members[:12])
    question = f"Summarise what the sources say about {view.title} (members: {members}): recurring themes first."
    answer = answer_or_fallback(question, hits, model, lambda: extractive_summary(view))
    verified = replace(verify_answer(answer), question=f"Summarise {view.title}.")
    if verified.fallback is None and not verified.sentences:
        # Every sentence was removed (or the model said nothing): the view's own quotes, flagged, never an
        # empty summary. What was removed stays counted.
        flagged = replace(extractive_summary(view), fallback=SUMMARY_UNSUPPORTED)
        return replace(flagged, removed=verified.removed, removed_sentences=verified.removed_sentences)
    return verified


def summarised_view(view: CommunityView, summary: Answer) -> CommunityView:
    """The view with the summary's sentences as its points (each with all the quotes it cites), which the
    GLOBAL route maps to themes; the view itself when the summary is the extractive one."""
    if summary.mode is not AnswerMode.LLM or not summary.sentences:
        return view
    n = len(summary.sentences)
    points = tuple(
        CommunityPoint(s.text, s.citation_ids[0], (), "summary", float(n - i), citation_ids=s.citation_ids)
        for i, s in enumerate(summary.sentences)
        if s.citation_ids
    )
    return replace(view, points=points, citations=summary.citations)


# A summary's request holds the answer prompt and the view's quoted sentences (ViewSettings.facts_quoted at
# most, about 40 tokens each, with their chunks' titles); its reply is a few cited sentences.
SUMMARY_QUOTE_TOKENS = 40
SUMMARY_OUTPUT_TOKENS = 300


def summary_request_tokens(count_tokens: Callable[[str], int] = estimate_tokens) -> int:
    """Input tokens of one summary request, counted as re-extraction counts its requests
    (`extraction.tier3.request_tokens`: every message and the reply schema, by the same counter): the
    answer prompt of a summary question, plus `facts_quoted` quotes of a typical sentence's length."""
    from kgrag_core.answering.generative import ANSWER_SCHEMA, build_messages
    from kgrag_core.extraction.tier3 import request_tokens  # only a preview loads the extraction package

    question = "Summarise what the sources say about A / B / C (members: A, B, C): recurring themes first."
    fixed = request_tokens(build_messages(question, []), ANSWER_SCHEMA, count_tokens)
    return fixed + ViewSettings().facts_quoted * SUMMARY_QUOTE_TOKENS


def summary_cost_preview(
    communities: int, cost: CostModel, *, llm: bool, count_tokens: Callable[[str], int] = estimate_tokens
) -> dict[str, object]:
    """What abstractive summaries of `communities` would cost, per access scope that queries them (they are
    written on demand, one per community and scope), priced and timed like re-extraction (its CostModel,
    its token counting). Without a model: nothing."""
    calls = communities if llm else 0
    tokens_in = calls * summary_request_tokens(count_tokens) if calls else 0
    tokens_out = calls * SUMMARY_OUTPUT_TOKENS
    return {
        "summaries": {
            "llm": llm,
            "per_scope": True,
            "calls": calls,
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "tokens_counted": cost.tokens_counted,
            "cost": cost.cost(tokens_in, tokens_out),
            "currency": cost.currency,
            "priced": cost.input_price_per_mtok is not None and cost.output_price_per_mtok is not None,
            "seconds": round(calls * cost.seconds_per_call, 1),
        }
    }


@dataclass(slots=True)
class SummaryCache:
    """Abstractive summaries served from memory: one model call per (community content hash, the caller's
    readable ACL classes, model, prompt version, the caller's view) and corpus-and-ACL generation. Keyed by
    every class the caller reads, not only those its quotes come from: the view's title and members (in the
    prompt) come from evidence of any of them. An entry is served only through
    `may_serve` (the caller reads every class of its scope, the community is neither stale nor changed),
    and only for the generation it was written in: every deletion and ACL change bumps the generation, so
    a summary resting on deleted or re-scoped evidence is dropped at its next lookup, never served. Held in
    this process only (nothing is written out, so nothing to seal), at most `capacity` entries."""

    capacity: int = 512
    model_calls: int = 0  # summaries written by the model (misses), for tests and metrics
    _entries: OrderedDict[str, tuple[SummaryKey, int, Answer]] = field(default_factory=OrderedDict)

    def summary(
        self,
        community: Community,
        view: CommunityView,
        load: Callable[[Sequence[str]], Mapping[str, SearchHit]],
        model: ChatModel,
        readable_classes: Collection[str] | None,
        generation: int,
    ) -> Answer:
        """The caller's abstractive summary of `view` (their own view of `community`), from the cache when
        an entry for exactly its scope may reach them, else written by `model` from the chunks its quotes
        come from (`load`: the caller's ACL-rechecked chunk loader) and kept."""
        if community.stale:  # fail closed until rebuilt: no summary served or written, no model call
            return replace(extractive_summary(view), fallback=COMMUNITY_STALE)
        # The scope: every class the caller reads (what the view was read through), "*" for an administrator.
        scope = ["*"] if readable_classes is None else list(readable_classes)
        scoped = summary_key(community, scope, model.model_id)
        key = replace(scoped, view_digest=view_digest(view))
        cached = self._entries.get(key.cache_key())
        if cached is not None:
            kept_key, kept_generation, answer = cached
            if kept_generation == generation and kept_key == key and may_serve(kept_key, community, readable_classes):
                self._entries.move_to_end(key.cache_key())
                return answer
            del self._entries[key.cache_key()]  # another generation (a deletion or ACL change since): dropped
        chunk_ids = list(dict.fromkeys(c.chunk_id for c in view.citations))
        found = load(chunk_ids)  # only on a miss: a cached summary needs no chunk read
        answer = abstractive_summary(view, [found[c] for c in chunk_ids if c in found], model)
        self.model_calls += 1
        if answer.fallback not in FALLBACK_REASONS:  # a failed call is not kept: the next ask tries again
            self._entries[key.cache_key()] = (key, generation, answer)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return answer


def view_digest(view: CommunityView) -> str:
    """What a summary prompt is made of in one view: title, members, key sentences and where each is quoted."""
    parts = [view.title, *(f"{m.entity_id}={m.name}" for m in view.members)]
    parts += [f"{c.chunk_id}:{c.start_byte}:{c.end_byte}:{c.quote}" for c in view.citations]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
