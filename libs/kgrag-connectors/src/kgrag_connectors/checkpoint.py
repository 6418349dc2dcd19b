"""Where a connector resumes: the cursor of the last event whose batch kgrag fully took."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class Checkpoint(Protocol):
    def load(self) -> str | None: ...

    def save(self, cursor: str) -> None: ...


@dataclass(slots=True)
class MemoryCheckpoint:
    cursor: str | None = None

    def load(self) -> str | None:
        return self.cursor

    def save(self, cursor: str) -> None:
        self.cursor = cursor


@dataclass(frozen=True, slots=True)
class FileCheckpoint:
    """A JSON file, replaced atomically: a crash mid-write leaves the previous checkpoint, never half of one."""

    path: Path

    def load(self) -> str | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        cursor = data.get("cursor") if isinstance(data, dict) else None
        if not isinstance(cursor, str):
            raise ValueError(f"{self.path} is not a kgrag connector checkpoint")
        return cursor

    def save(self, cursor: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", dir=self.path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"cursor": cursor}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
