"""What every handler returns, and how a runner treats each input event."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

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


class StagedWork(Protocol):
    """A batch a handler has staged: the expensive, write-free half done, the writes still to come."""

    @property
    def keys(self) -> frozenset[str]: ...


@runtime_checkable
class StagedHandler(Handler, Protocol):
    """A handler whose batches split into a write-free stage (the embedding, say) and the writes, so a
    runner can stage batch N+1 while batch N's writes run. `handle` must equal `finish(stage(...))`.

    `conflict_keys` names what a batch touches, or None when the batch must run alone (after every earlier
    batch's writes); two batches that share a key never overlap, since staging reads what writing changes."""

    def conflict_keys(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> frozenset[str] | None: ...

    def stage(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> StagedWork: ...

    def finish(self, staged: StagedWork) -> HandlerResult: ...
