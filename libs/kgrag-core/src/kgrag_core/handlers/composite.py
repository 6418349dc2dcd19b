"""Several handlers behind one consumer group: each event goes to every part that listens to its topic.

The graph-writer uses it to keep two projections from one stream: the lexical graph (documents and chunks)
and the knowledge graph (facts, whose reach changes with every re-commit, ACL change and deletion).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgrag_core.handlers.protocol import Handler, HandlerResult


@dataclass(slots=True)
class CompositeHandler:
    name: str
    parts: Sequence[Handler]
    topics: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.topics = tuple(dict.fromkeys(t for part in self.parts for t in part.topics))

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        dead: set[tuple[str, str]] = set()
        for part in self.parts:
            if topic not in part.topics:
                continue
            out = part.handle(topic, batch)
            result.outputs.extend(out.outputs)
            result.outcomes.extend(out.outcomes)
            for letter in out.dead_letters:
                # Two parts refusing the same event send it to the dead-letter topic once.
                if (letter.key, letter.reason) not in dead:
                    dead.add((letter.key, letter.reason))
                    result.dead_letters.append(letter)
        return result


def handler_parts(handlers: Sequence[Handler]) -> list[Handler]:
    """Every handler, a composite's parts in its place (to find one part by type, e.g. the resolver)."""
    out: list[Handler] = []
    for h in handlers:
        out.extend(handler_parts(h.parts) if isinstance(h, CompositeHandler) else [h])
    return out
