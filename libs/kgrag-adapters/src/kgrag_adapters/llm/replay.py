"""Record and replay chat completions, keyed by a hash of the request: no model is called in tests or CI.

`RecordingChatModel` wraps a real endpoint and writes every reply to `<key>.json`; `ReplayChatModel`
serves those files (or hand-authored ones) for the same requests. The key covers the model ID, the
messages and the JSON schema, so a changed prompt, ontology or model misses instead of replaying a stale
reply.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kgrag_adapters.lifecycle import Closeable
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ports import ChatMessage, ChatModel


def request_document(
    model_id: str, messages: Sequence[ChatMessage], json_schema: Mapping[str, object] | None
) -> dict[str, Any]:
    return {
        "model": model_id,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "json_schema": json_schema,
    }


def request_key(model_id: str, messages: Sequence[ChatMessage], json_schema: Mapping[str, object] | None) -> str:
    """sha256 of the request as canonical JSON (sorted keys, no insignificant whitespace, UTF-8)."""
    canonical = json.dumps(
        request_document(model_id, messages, json_schema), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def write_recording(directory: Path, key: str, request: Mapping[str, Any], reply: str, model_id: str) -> Path:
    """Write `<key>.json` atomically (a reader never sees half a file)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{key}.json"
    body = json.dumps(
        {"request": request, "reply": reply, "recorded_from": model_id}, indent=2, sort_keys=True, ensure_ascii=False
    )
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class RecordingChatModel(Closeable):
    """Passes requests to `inner` and records each reply under its request key. Failures are not recorded."""

    def __init__(self, inner: ChatModel, directory: Path) -> None:
        self._inner = inner
        self._directory = directory

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None) -> str:
        reply = self._inner.complete(messages, json_schema=json_schema)
        model_id = self._inner.model_id
        request = request_document(model_id, messages, json_schema)
        write_recording(self._directory, request_key(model_id, messages, json_schema), request, reply, model_id)
        return reply

    def close(self) -> None:
        if isinstance(self._inner, Closeable):
            self._inner.close()


class ReplayChatModel(Closeable):
    """Serves recorded replies. `model_id` is part of the key: replay a recording under the ID it was made
    with (`recorded_from`), or author replies for the default "replay". A miss is LLM_UNAVAILABLE."""

    def __init__(self, directory: Path, model_id: str = "replay") -> None:
        self._directory = directory
        self._model_id = model_id
        self.misses: list[str] = []  # keys asked for and not found, for a test's or a report's message

    @property
    def model_id(self) -> str:
        return self._model_id

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None) -> str:
        key = request_key(self._model_id, messages, json_schema)
        path = self._directory / f"{key}.json"
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as err:
            self.misses.append(key)
            raise KgragError(
                ErrorCode.LLM_UNAVAILABLE,
                f"no recorded reply for request {key} (model {self._model_id})",
                hint=f"record it: add {key}.json to {self._directory} (run once with a RecordingChatModel)",
            ) from err
        except (OSError, ValueError) as err:
            raise KgragError(
                ErrorCode.LLM_UNAVAILABLE,
                f"recorded reply {path} is unreadable: {err}",
                hint="re-record the reply or fix the JSON file",
            ) from err
        reply = record.get("reply") if isinstance(record, dict) else None
        if not isinstance(reply, str):
            raise KgragError(
                ErrorCode.LLM_UNAVAILABLE,
                f"recorded reply {path} has no string 'reply'",
                hint='a recording is {"request": ..., "reply": "<text>", "recorded_from": "<model>"}',
            )
        return reply

    def close(self) -> None:
        """Nothing to release; present so wiring can close any chat model alike."""
