"""Streamed answers: verified sentences one by one as the (FAKE, scripted) model writes them, never an
unverified one; the extractive answer when the model fails first; closing the stream stops the model."""

from __future__ import annotations

import json

from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.model import Answer, AnswerMode
from kgrag_core.answering.streaming import ReplyItems, StreamedSentence, stream_answer
from kgrag_testing.scripted_llm import ScriptedChatModel, StreamCut, llm_timeout
from tests.unit.test_answer_verification import FAITHFUL, HITS, UNFAITHFUL, _reply

QUESTION = "Who is the on-call owner of Atlas?"


def _extractive() -> Answer:
    return extractive_answer(QUESTION, HITS)


def test_the_reply_parser_hands_over_each_item_once_it_is_complete() -> None:
    reply = _reply(FAITHFUL[:2])
    parser = ReplyItems()
    seen: list[tuple[int, object]] = []
    for end in range(1, len(reply) + 1):
        for item in parser.feed(reply[end - 1]):
            seen.append((end, item))
    assert [item for _, item in seen] == json.loads(reply)["sentences"]
    first_end = reply.index("}]}") + 3  # the first item closes here, long before the reply ends
    assert seen[0][0] == first_end and seen[1][0] < len(reply)


def test_only_verified_sentences_are_streamed_and_the_answer_comes_last() -> None:
    mixed = [FAITHFUL[0], UNFAITHFUL[0][:3], FAITHFUL[1], UNFAITHFUL[3][:3]]
    model = ScriptedChatModel([_reply(mixed)], token_chars=3)
    events = list(stream_answer(QUESTION, HITS, model, _extractive))
    *sentences, answer = events
    assert all(isinstance(e, StreamedSentence) for e in sentences) and isinstance(answer, Answer)
    assert [e.sentence.text for e in sentences if isinstance(e, StreamedSentence)] == [FAITHFUL[0][0], FAITHFUL[1][0]]
    assert answer.mode is AnswerMode.LLM and answer.removed_sentences == 2
    assert [s.text for s in answer.sentences] == [FAITHFUL[0][0], FAITHFUL[1][0]]
    streamed_ids = [c.id for e in sentences if isinstance(e, StreamedSentence) for c in e.citations]
    assert streamed_ids == [c.id for c in answer.citations] == [1, 2]


def test_a_model_failing_before_its_first_sentence_gives_way_to_the_extractive_answer() -> None:
    for failure, reason in ((llm_timeout(), "llm_timeout"), ("I cannot help with that.", "llm_invalid_reply")):
        events = list(stream_answer(QUESTION, HITS, ScriptedChatModel([failure]), _extractive))
        answer = events[-1]
        assert isinstance(answer, Answer) and answer.mode is AnswerMode.EXTRACTIVE
        assert answer.fallback == reason and answer.answered
        assert [e.sentence.text for e in events[:-1] if isinstance(e, StreamedSentence)] == [
            s.text for s in answer.sentences
        ]


def test_a_model_cut_off_mid_answer_keeps_what_was_verified_and_says_why() -> None:
    reply = _reply(FAITHFUL)
    cut = reply[: reply.index(FAITHFUL[1][0])]  # the first item is complete, the second is not
    events = list(stream_answer(QUESTION, HITS, ScriptedChatModel([StreamCut(cut, llm_timeout())]), _extractive))
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.mode is AnswerMode.LLM and answer.fallback == "llm_timeout"
    assert [s.text for s in answer.sentences] == [FAITHFUL[0][0]]


def test_closing_the_stream_stops_the_model() -> None:
    model = ScriptedChatModel([_reply(FAITHFUL)], token_chars=2)
    stream = stream_answer(QUESTION, HITS, model, _extractive)
    first = next(stream)
    assert isinstance(first, StreamedSentence) and first.sentence.text == FAITHFUL[0][0]
    stream.close()  # what the HTTP layer does when the client disconnects
    total = -(-len(_reply(FAITHFUL)) // 2)
    assert model.streams_closed == 1 and model.streamed_tokens < total


def test_without_a_model_the_extractive_answer_is_streamed_sentence_by_sentence() -> None:
    events = list(stream_answer(QUESTION, HITS, None, _extractive))
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.mode is AnswerMode.EXTRACTIVE and answer.fallback is None
    assert len(events) == len(answer.sentences) + 1 >= 2
