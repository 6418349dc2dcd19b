"""The entity-resolver handler: incremental passes over what changed documents could merge with, a full pass
first and then once per interval, merges announced as entities.changed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kgrag_core.events import ENTITIES_CHANGED, GRAPH_CHANGED
from kgrag_core.handlers.entity_resolver import EntityResolverHandler
from kgrag_core.resolution.service import ResolutionReport


@dataclass
class RecordingService:
    """Stands in for ResolutionService: records which pass ran (None: full) and reports one merge."""

    calls: list[list[str] | None] = field(default_factory=list)

    def run(self, doc_ids: Sequence[str] | None = None) -> ResolutionReport:
        self.calls.append(None if doc_ids is None else list(doc_ids))
        return ResolutionReport(profiles=2, merges=1, merged={"ent_a": ["ent_b"]})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def events(*doc_ids: str) -> list[tuple[str, dict[str, object]]]:
    return [(d, {"doc_id": d}) for d in doc_ids]


def test_full_pass_first_then_incremental_until_the_interval_is_up() -> None:
    service, clock = RecordingService(), Clock()
    handler = EntityResolverHandler(service, full_pass_every_s=60.0, clock=clock)  # type: ignore[arg-type]
    handler.handle(GRAPH_CHANGED, events("doc-2", "doc-1", "doc-2"))
    clock.now += 30
    result = handler.handle(GRAPH_CHANGED, events("doc-2", "doc-1", "doc-2"))
    clock.now += 31
    handler.handle(GRAPH_CHANGED, events("doc-3"))
    clock.now += 1
    handler.handle(GRAPH_CHANGED, events("doc-3"))
    assert service.calls == [None, ["doc-1", "doc-2"], None, ["doc-3"]]
    merged = [o for o in result.outputs if o.payload.get("reason") == "merge"]
    assert [(o.topic, o.payload["entity_ids"]) for o in merged] == [(ENTITIES_CHANGED, ["ent_a", "ent_b"])]


def test_without_an_interval_every_pass_is_incremental_and_bad_events_dead_letter() -> None:
    service = RecordingService()
    handler = EntityResolverHandler(service, full_pass_every_s=None)  # type: ignore[arg-type]
    result = handler.handle(GRAPH_CHANGED, [("k", {"doc_id": ""}), *events("doc-1")])
    assert service.calls == [["doc-1"]]
    assert [d.key for d in result.dead_letters] == ["k"]
    assert handler.handle(GRAPH_CHANGED, [("k2", {})]).outputs == [] and service.calls == [["doc-1"]]
