"""The entity-resolver handler: graph.changed -> an incremental resolution pass in PostgreSQL.

A batch costs one pass over what its documents could merge with (`ResolutionService.run(doc_ids)`); the
pass re-reads PostgreSQL, so a replayed event only repeats a pass that changes nothing (merge ids are
deterministic, applying one twice is a no-op). The first batch after a start, and the first one each
`full_pass_every_s` after that, runs the full pass instead: it catches what an incremental scope cannot see
(a match by sound or context alone), on both runtimes, with no scheduler to deploy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kgrag_core.errors import ErrorCode
from kgrag_core.events import ENTITIES_CHANGED, GRAPH_CHANGED, EntitiesChanged
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult, OutputEvent
from kgrag_core.resolution.service import ResolutionReport, ResolutionService


@dataclass(slots=True)
class EntityResolverHandler:
    service: ResolutionService
    name: str = "entity-resolver"
    topics: tuple[str, ...] = (GRAPH_CHANGED,)
    full_pass_every_s: float | None = 3600.0  # None: only incremental passes (a full one on demand)
    clock: Callable[[], float] = time.monotonic
    last_report: ResolutionReport | None = None
    _last_full: float | None = field(default=None, repr=False)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        doc_ids: list[str] = []
        for key, payload in batch:
            doc_id = payload.get("doc_id")
            if isinstance(doc_id, str) and doc_id:
                doc_ids.append(doc_id)
            else:
                reason = "the event has no doc_id"
                result.dead_letters.append(DeadLetter(key, payload, ErrorCode.MALFORMED_EVENT.value, reason))
        if doc_ids:
            now = self.clock()
            due = self.full_pass_every_s is not None and (
                self._last_full is None or now - self._last_full >= self.full_pass_every_s
            )
            report = self.service.run() if due else self.service.run(sorted(set(doc_ids)))
            if due:
                self._last_full = now
            self.last_report = report
            for canonical, members in sorted(report.merged.items()):
                event = EntitiesChanged(entity_ids=[canonical, *members], reason="merge")
                result.outputs.append(OutputEvent(ENTITIES_CHANGED, canonical, event.model_dump(mode="json")))
            for split in report.splits:  # namesakes split apart: both entities' facts changed
                event = EntitiesChanged(entity_ids=[split.from_id, split.entity_id], reason="split")
                result.outputs.append(OutputEvent(ENTITIES_CHANGED, split.from_id, event.model_dump(mode="json")))
            hubs = EntitiesChanged(reason="hubs", hubs=True)
            result.outputs.append(OutputEvent(ENTITIES_CHANGED, "hubs", hubs.model_dump(mode="json")))
        return result
