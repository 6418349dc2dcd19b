"""What every handler returns, and how a runner treats each input event."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kgrag_core.ingest import IngestOutcome


@dataclass(frozen=True, slots=True)
class OutputEvent:
    topic: str
    key: str
    payload: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An input the handler can never process: it goes to the dead-letter topic, the partition moves on."""

    key: str
    payload: Mapping[str, object]
    error_code: str
    reason: str


@dataclass(slots=True)
class HandlerResult:
    outputs: list[OutputEvent] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    outcomes: list[IngestOutcome] = field(default_factory=list)


class Handler(Protocol):
    name: str
    topics: tuple[str, ...]

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult: ...
