"""The entity-resolver handler: graph.changed -> a resolution pass over the knowledge graph in PostgreSQL.

Events carry no data the pass needs (it re-reads PostgreSQL), so a batch of any size costs one pass, and a
replayed event only repeats a pass that changes nothing (merge ids are deterministic, applying one twice is
a no-op).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgrag_core.errors import ErrorCode
from kgrag_core.events import ENTITIES_CHANGED, GRAPH_CHANGED, EntitiesChanged
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult, OutputEvent
from kgrag_core.resolution.service import ResolutionReport, ResolutionService


@dataclass(slots=True)
class EntityResolverHandler:
    service: ResolutionService
    name: str = "entity-resolver"
    topics: tuple[str, ...] = (GRAPH_CHANGED,)
    last_report: ResolutionReport | None = None

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        valid = 0
        for key, payload in batch:
            if isinstance(payload.get("doc_id"), str) and payload.get("doc_id"):
                valid += 1
            else:
                reason = "the event has no doc_id"
                result.dead_letters.append(DeadLetter(key, payload, ErrorCode.MALFORMED_EVENT.value, reason))
        if valid:
            report = self.service.run()
            self.last_report = report
            for canonical, members in sorted(report.merged.items()):
                event = EntitiesChanged(entity_ids=[canonical, *members], reason="merge")
                result.outputs.append(OutputEvent(ENTITIES_CHANGED, canonical, event.model_dump(mode="json")))
            hubs = EntitiesChanged(reason="hubs", hubs=True)
            result.outputs.append(OutputEvent(ENTITIES_CHANGED, "hubs", hubs.model_dump(mode="json")))
        return result
