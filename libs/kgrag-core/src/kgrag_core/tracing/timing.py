"""Per-stage timings of one query, recorded without threading a timer through every searcher's signature.

The searchers mark their stages (`with stage("dense"):`); the stages count only while a caller measures
(`with measuring() as t:`), on the caller's own context (a `ContextVar`, so concurrent requests on other
threads never mix their timings). Outside a measurement a stage costs one context-variable read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(slots=True)
class StageTimings:
    """Milliseconds per stage, summed when a stage runs more than once (hydration runs per fused slice)."""

    ms: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.ms[name] = self.ms.get(name, 0.0) + seconds * 1000.0

    def rounded(self) -> dict[str, float]:
        return {name: round(value, 3) for name, value in sorted(self.ms.items())}


_CURRENT: ContextVar[StageTimings | None] = ContextVar("kgrag_stage_timings", default=None)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as `name` when a measurement is open on this context; otherwise do nothing."""
    timings = _CURRENT.get()
    if timings is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        timings.add(name, time.perf_counter() - started)


@contextmanager
def measuring() -> Iterator[StageTimings]:
    """Collect the stages run inside the block; `total` is the block's own wall time."""
    timings = StageTimings()
    token = _CURRENT.set(timings)
    started = time.perf_counter()
    try:
        yield timings
    finally:
        timings.add("total", time.perf_counter() - started)
        _CURRENT.reset(token)
