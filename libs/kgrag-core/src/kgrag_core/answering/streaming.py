"""Answers as a stream: each sentence of the model's reply is verified as soon as its JSON item is
complete, and only verified sentences are handed on; the whole answer comes last.

The model's reply is the same JSON as the non-streaming answerer's (`generative.ANSWER_SCHEMA`); items of
its `sentences` array are cut out of the growing text as each one closes. Stopping the iteration (a
client that went away) closes the model's stream, which stops the generation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from kgrag_core.answering.context import AnswerContext
from kgrag_core.answering.fallback import fallback_reason
from kgrag_core.answering.generative import (
    ANSWER_SCHEMA,
    UnusableReply,
    assemble,
    build_messages,
    context_sources,
    parse_reply,
    verify_item,
)
from kgrag_core.answering.model import Answer, AnswerSentence, Citation, RemovedSentence
from kgrag_core.answering.verification import SupportingFact, verify_answer
from kgrag_core.errors import KgragError
from kgrag_core.ports import ChatMessage, ChatModel, StreamingChatModel
from kgrag_core.search import SearchHit

_SENTENCES_KEY = re.compile(r'"sentences"\s*:\s*\[')
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class StreamedSentence:
    """A verified sentence and the citations it introduced (numbered as in the final answer)."""

    index: int
    sentence: AnswerSentence
    citations: tuple[Citation, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "text": self.sentence.text,
            "citations": [c.as_dict() for c in self.citations],
        }


AnswerStream = Iterator[StreamedSentence | Answer]


def reply_tokens(
    model: ChatModel, messages: Sequence[ChatMessage], json_schema: dict[str, object] | None
) -> Iterator[str]:
    """The model's reply piece by piece; a model that cannot stream gives it in one piece."""
    if isinstance(model, StreamingChatModel):
        return model.stream(messages, json_schema=json_schema)
    return iter([model.complete(messages, json_schema=json_schema)])


class ReplyItems:
    """Cuts the complete items of the reply's `sentences` array out of the text received so far."""

    def __init__(self) -> None:
        self.text = ""
        self._pos: int | None = None  # where the next item may start, once the array has opened
        self._closed = False

    def feed(self, piece: str) -> list[object]:
        self.text += piece
        if self._pos is None:
            opened = _SENTENCES_KEY.search(self.text)
            if opened is None:
                return []
            self._pos = opened.end()
        items: list[object] = []
        while not self._closed:
            pos = self._skip(self._pos)
            if pos >= len(self.text):
                break
            if self.text[pos] == "]":
                self._closed = True
                break
            try:
                item, end = _DECODER.raw_decode(self.text, pos)
            except json.JSONDecodeError:
                break  # not complete yet (a malformed reply is caught by the full parse at the end)
            items.append(item)
            self._pos = end
        return items

    def _skip(self, pos: int) -> int:
        while pos < len(self.text) and (self.text[pos].isspace() or self.text[pos] == ","):
            pos += 1
        return pos


def stream_answer(
    question: str,
    hits: Sequence[SearchHit],
    model: ChatModel | None,
    extractive: Callable[[], Answer],
    *,
    facts: Sequence[SupportingFact] = (),
    context: AnswerContext | None = None,
) -> AnswerStream:
    """Verified sentences as they are ready, then the answer. Without a model, or when the model fails
    before its first verified sentence, the (verified) extractive answer is streamed instead, flagged."""
    if model is None:
        yield from _streamed(verify_answer(extractive(), facts))
        return
    evidence = context_sources(hits, context)
    if not evidence:
        yield assemble(question, evidence, model.model_id, (), (), ())
        return
    tokens: Iterator[str] = iter(())
    parser = ReplyItems()
    sentences: list[AnswerSentence] = []
    citations: list[Citation] = []
    removed: list[RemovedSentence] = []
    failure: str | None = None
    try:
        tokens = reply_tokens(model, build_messages(question, evidence, context), ANSWER_SCHEMA)
        for piece in tokens:
            for item in parser.feed(piece):
                outcome = verify_item(item, evidence, len(citations), facts)
                if isinstance(outcome, RemovedSentence):
                    removed.append(outcome)
                    continue
                sentence, new = outcome
                sentences.append(sentence)
                citations.extend(new)
                yield StreamedSentence(len(sentences) - 1, sentence, tuple(new))
        parse_reply(parser.text)  # the whole reply must still be an answer
    except (KgragError, UnusableReply, TimeoutError) as err:
        failure = fallback_reason(err)
        if failure is None:
            raise
    finally:
        close = getattr(tokens, "close", None)
        if close is not None:
            close()
    if failure is not None and not sentences:
        yield from _streamed(replace(verify_answer(extractive(), facts), fallback=failure))
        return
    answer = assemble(question, evidence, model.model_id, sentences, citations, removed, context)
    # Sentences already streamed stay; the flag says the model's answer was cut short.
    yield answer if failure is None else replace(answer, fallback=failure)


def _streamed(answer: Answer) -> AnswerStream:
    by_id = {c.id: c for c in answer.citations}
    seen: set[int] = set()
    for index, sentence in enumerate(answer.sentences):
        new = tuple(by_id[i] for i in sentence.citation_ids if i in by_id and i not in seen)
        seen.update(sentence.citation_ids)
        yield StreamedSentence(index, sentence, new)
    yield answer
