"""The community API behind the CLI (`kgrag communities …`) and HTTP (`/v1/communities…`,
`/v1/admin/communities/rebuild`). Reads are the caller's view (kgrag_core.communities.visible); a rebuild
needs the admin scope and takes the embedded runtime's writer gate, like every other graph write."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.communities.model import Community, RebuildPlan
from kgrag_core.communities.service import CommunityService
from kgrag_core.communities.visible import visible_communities, visible_community
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph.ports import GraphReader
from kgrag_core.ports import AclStore
from kgrag_runtime.single_writer import SingleWriter, shared_nothing, writes

MAX_LIMIT = 200


@dataclass(slots=True)
class CommunityAdmin:
    service: CommunityService
    reader: GraphReader  # visibility of members (distributed: possibly the Neo4j projection)
    acl: AclStore
    writer: SingleWriter = field(default_factory=shared_nothing)
    # Adds to a dry run's preview (G2: the LLM cost of summaries), given the plan.
    preview: Callable[[RebuildPlan], dict[str, object]] | None = None
    # The caller's summary of a community for `show` (G2: kgrag_runtime.global_answers), or None.
    summarise: Callable[[Community, Caller], dict[str, object] | None] | None = None

    def listing(self, caller: Caller, *, level: int | None = None, limit: int = 50) -> dict[str, object]:
        if not 1 <= limit <= MAX_LIMIT or (level is not None and level < 0):
            raise KgragError(
                ErrorCode.LIMIT_EXCEEDED,
                f"limit must be 1-{MAX_LIMIT} and level at least 0.",
                hint="Ask for a smaller page.",
            )
        found = visible_communities(
            self.service.store.communities(level), self.reader, self._visible(caller), limit=limit
        )
        return {"level": level, "communities": [c.as_dict() for c in found]}

    def show(self, community_id: str, caller: Caller) -> dict[str, object]:
        community = self.service.store.community(community_id)
        visible = self._visible(caller)
        seen = visible_community(community, self.reader, visible) if community is not None else None
        if seen is None:
            raise KgragError(
                ErrorCode.COMMUNITY_NOT_FOUND,
                f"No community {community_id!r} you may see.",
                hint="List them with `kgrag communities list`.",
            )
        children = [
            v.community_id
            for c in self.service.store.children(community_id)
            if (v := visible_community(c, self.reader, visible)) is not None
        ]
        out: dict[str, object] = {**seen.as_dict(), "children": children}
        if self.summarise is not None and community is not None:
            out["summary"] = self.summarise(community, caller)
        return out

    def rebuild(self, *, dry_run: bool = False, stale_only: bool = False) -> dict[str, object]:
        if dry_run:
            plan = self.service.plan(full=not stale_only)
            out: dict[str, object] = {"dry_run": True, **dataclasses.asdict(plan)}
            if self.preview is not None:
                out.update(self.preview(plan))
            return out
        return self._rebuild(stale_only)

    @writes
    def _rebuild(self, stale_only: bool) -> dict[str, object]:
        report = self.service.refresh_stale() if stale_only else self.service.rebuild()
        return {"dry_run": False, **dataclasses.asdict(report)}

    def _visible(self, caller: Caller) -> list[str] | None:
        return None if caller.admin else readable_classes(self.acl.acl_classes(), caller)
