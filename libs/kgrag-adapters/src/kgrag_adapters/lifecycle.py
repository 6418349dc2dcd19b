"""One context-manager protocol for every adapter that holds a connection, a file lock or a process."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class Closeable(ABC):
    """`with Adapter(...) as a:` closes it on exit; `close()` must be safe to call twice."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
