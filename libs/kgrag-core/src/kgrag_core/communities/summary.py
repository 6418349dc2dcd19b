"""Abstractive community summaries (with an LLM): written from a caller's view, verified like answers, cached
per evidence scope (ADR 0009, decisions 4 and 5).

The scope of a summary is the sorted set of ACL classes of the chunks its view quoted. It is cached under
(community content hash, scope, model, prompt version) and served only to a caller whose readable classes
cover the whole scope. A stale community's cached summaries are never served (fail closed until the
community is rebuilt): its extractive view, which reads live facts, is what the caller gets instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kgrag_core.answering.fallback import answer_or_fallback
from kgrag_core.answering.model import Answer, AnswerMode, AnswerSentence
from kgrag_core.answering.verification import verify_answer
from kgrag_core.communities.model import Community
from kgrag_core.communities.view import CommunityView
from kgrag_core.ports import ChatModel
from kgrag_core.search import SearchHit

if TYPE_CHECKING:  # a search never loads the extraction package
    from kgrag_core.extraction.rerun import CostModel

PROMPT_VERSION = "community-summary-1"
EXTRACTIVE_NOTICE = "The community's key sentences, quoted as written."


@dataclass(frozen=True, slots=True)
class SummaryKey:
    community_id: str
    content_hash: str
    scope: tuple[str, ...]  # sorted ACL class ids of the evidence the summary used
    model_id: str
    prompt_version: str = PROMPT_VERSION

    def cache_key(self) -> str:
        raw = "\x1f".join([self.content_hash, ",".join(self.scope), self.model_id, self.prompt_version])
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
    return replace(verify_answer(answer), question=f"Summarise {view.title}.")


# What one summary's request and reply hold: the view's quoted sentences (ViewSettings.facts_quoted at most,
# about 40 tokens each, plus their chunks' titles) and the instructions; a reply of a few cited sentences.
SUMMARY_INPUT_TOKENS = 24 * 40 + 600
SUMMARY_OUTPUT_TOKENS = 300


def summary_cost_preview(communities: int, cost: CostModel, *, llm: bool) -> dict[str, object]:
    """What abstractive summaries of `communities` would cost, per access scope that queries them (they are
    written on demand, one per community and scope), priced like re-extraction. Without a model: nothing."""
    calls = communities if llm else 0
    tokens_in, tokens_out = calls * SUMMARY_INPUT_TOKENS, calls * SUMMARY_OUTPUT_TOKENS
    return {
        "summaries": {
            "llm": llm,
            "per_scope": True,
            "calls": calls,
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "cost": cost.cost(tokens_in, tokens_out),
            "currency": cost.currency,
            "priced": cost.input_price_per_mtok is not None and cost.output_price_per_mtok is not None,
            "seconds": round(calls * cost.seconds_per_call, 1),
        }
    }
