"""One consumer group, several projections: events reach every part listening to their topic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgrag_core.handlers.composite import CompositeHandler
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult, OutputEvent


@dataclass
class Recorder:
    name: str
    topics: tuple[str, ...]
    seen: list[tuple[str, list[str]]] = field(default_factory=list)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        self.seen.append((topic, [k for k, _ in batch]))
        result = HandlerResult()
        for key, payload in batch:
            if "doc_id" not in payload:
                result.dead_letters.append(DeadLetter(key, payload, "MALFORMED_EVENT", "no doc_id"))
            else:
                result.outputs.append(OutputEvent("out", key, {"by": self.name}))
        return result


def test_events_reach_every_part_that_listens_and_only_those() -> None:
    lexical = Recorder("lexical", ("chunks.changed",))
    knowledge = Recorder("knowledge", ("chunks.changed", "graph.changed"))
    both = CompositeHandler("graph-writer", [lexical, knowledge])
    assert both.topics == ("chunks.changed", "graph.changed")
    result = both.handle("chunks.changed", [("a", {"doc_id": "a"})])
    assert [o.payload["by"] for o in result.outputs] == ["lexical", "knowledge"]
    both.handle("graph.changed", [("b", {"doc_id": "b"})])
    assert lexical.seen == [("chunks.changed", ["a"])]
    assert knowledge.seen == [("chunks.changed", ["a"]), ("graph.changed", ["b"])]


def test_an_event_two_parts_refuse_is_dead_lettered_once() -> None:
    both = CompositeHandler("graph-writer", [Recorder("x", ("t",)), Recorder("y", ("t",))])
    result = both.handle("t", [("k", {"bad": True})])
    assert len(result.dead_letters) == 1 and result.outputs == []
