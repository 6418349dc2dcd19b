"""The community-builder handler: after resolution, recluster only the communities a change touched.

graph.changed names documents: the canonical entities their chunks name now are the changed ones.
entities.changed (a merge or split) names entity ids directly (a hub relabelling only is left to the
full rebuild: it reshapes everything). A deletion or an ACL change marked its communities stale in its
own transaction, and reaches this handler as the graph.changed its re-extraction announces; every batch
reclusters whatever is stale. A full rebuild runs when there are no communities yet
and every `full_rebuild_every_s` (None: only on demand, `kgrag communities rebuild`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kgrag_core.communities.model import BuildReport
from kgrag_core.communities.service import CommunityService
from kgrag_core.errors import ErrorCode
from kgrag_core.events import ENTITIES_CHANGED, GRAPH_CHANGED
from kgrag_core.handlers.protocol import DeadLetter, HandlerResult


@dataclass(slots=True)
class CommunityBuilderHandler:
    service: CommunityService
    name: str = "community-builder"
    topics: tuple[str, ...] = (GRAPH_CHANGED, ENTITIES_CHANGED)
    full_rebuild_every_s: float | None = None
    clock: Callable[[], float] = time.monotonic
    on_report: Callable[[BuildReport], None] | None = None
    last_report: BuildReport | None = None
    _last_full: float | None = field(default=None, repr=False)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        doc_ids: list[str] = []
        entity_ids: list[str] = []
        for key, payload in batch:
            if topic == ENTITIES_CHANGED:
                ids = payload.get("entity_ids", [])
                if isinstance(ids, list) and all(isinstance(i, str) for i in ids):
                    entity_ids += [str(i) for i in ids]
                    continue
                reason = "entity_ids is not a list of ids"
            else:
                doc_id = payload.get("doc_id")
                if isinstance(doc_id, str) and doc_id:
                    doc_ids.append(doc_id)
                    continue
                reason = "the event has no doc_id"
            result.dead_letters.append(DeadLetter(key, payload, ErrorCode.MALFORMED_EVENT.value, reason))
        if not doc_ids and not entity_ids:
            return result
        if topic == GRAPH_CHANGED:
            entity_ids += self.service.source.entities_of_documents(sorted(set(doc_ids)))
        now = self.clock()
        periodic = self.full_rebuild_every_s is not None and (
            self._last_full is None or now - self._last_full >= self.full_rebuild_every_s
        )
        if periodic or self.service.store.counts()["communities"] == 0:
            self._last_full = now
            self._report(self.service.rebuild())
            return result
        if entity_ids:
            self._report(self.service.refresh(sorted(set(entity_ids))))
        if self.service.store.counts()["stale"]:
            self._report(self.service.refresh_stale())
        return result

    def _report(self, report: BuildReport) -> None:
        self.last_report = report
        if self.on_report is not None:
            self.on_report(report)
