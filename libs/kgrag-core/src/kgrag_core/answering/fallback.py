"""An LLM that fails, times out or refuses gives way to the extractive answer, flagged with the reason.

Retrieval already found the evidence; a model outage must not turn that into a 5xx. Only the model's own
failures are caught (LLM_UNAVAILABLE, LLM_RATE_LIMITED, an unusable reply); anything else is a bug and
propagates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from kgrag_core.answering.context import AnswerContext
from kgrag_core.answering.generative import UnusableReply, llm_answer
from kgrag_core.answering.model import Answer
from kgrag_core.answering.verification import SupportingFact
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ports import ChatModel
from kgrag_core.search import SearchHit

LLM_TIMEOUT = "llm_timeout"
LLM_UNAVAILABLE = "llm_unavailable"
LLM_RATE_LIMITED = "llm_rate_limited"
LLM_REFUSED = "llm_refused"
LLM_INVALID_REPLY = "llm_invalid_reply"
FALLBACK_REASONS = (LLM_TIMEOUT, LLM_UNAVAILABLE, LLM_RATE_LIMITED, LLM_REFUSED, LLM_INVALID_REPLY)


def fallback_reason(err: BaseException) -> str | None:
    """Why a model call failed, as a stable reason; None when `err` is not a model failure."""
    if isinstance(err, UnusableReply):
        return LLM_INVALID_REPLY
    if isinstance(err, TimeoutError):
        return LLM_TIMEOUT
    if not isinstance(err, KgragError):
        return None
    if err.code is ErrorCode.LLM_RATE_LIMITED:
        return LLM_RATE_LIMITED
    if err.code is not ErrorCode.LLM_UNAVAILABLE:
        return None
    message = str(err).lower()
    if "refus" in message:
        return LLM_REFUSED
    if "timeout" in message or "timed out" in message:
        return LLM_TIMEOUT
    return LLM_UNAVAILABLE


def answer_or_fallback(
    question: str,
    hits: Sequence[SearchHit],
    model: ChatModel,
    fallback: Callable[[], Answer],
    *,
    facts: Sequence[SupportingFact] = (),
    context: AnswerContext | None = None,
) -> Answer:
    """The model's verified answer, or `fallback()` flagged with why the model's could not be used."""
    try:
        return llm_answer(question, hits, model, facts=facts, context=context)
    except (KgragError, UnusableReply, TimeoutError) as err:
        reason = fallback_reason(err)
        if reason is None:
            raise
    return replace(fallback(), fallback=reason)
