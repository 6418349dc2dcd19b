"""Server-sent events for `POST /v1/ask` with `options.stream` (docs/http-api.md, "Streaming answers").

Each event is `event: <name>` and one line of JSON `data:`. The events come from `KgragApp.ask_stream`, a
blocking iterator, advanced one step at a time in a worker thread. When the client goes away Starlette
cancels the response; the `finally` closes the iterator, which closes the model's stream, so the
generation stops instead of running on for nobody.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import anyio.to_thread
from fastapi.responses import StreamingResponse

from kgrag_core.errors import KgragError

Event = tuple[str, dict[str, object]]
_END: Event = ("", {})


def encode(event: Event) -> bytes:
    name, data = event
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def sse_response(events: Iterator[Event]) -> StreamingResponse:
    """The stream as a response. The first event (it runs the search) is taken here, in the request's own
    thread, so that a failing search is an ordinary HTTP error, not a broken stream."""
    first = next(events, _END)
    return StreamingResponse(
        sse_body(first, events),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def sse_body(first: Event, events: Iterator[Event]) -> AsyncIterator[bytes]:
    try:
        event = first
        while event is not _END:
            yield encode(event)
            event = await anyio.to_thread.run_sync(next, events, _END)
    except KgragError as err:
        # Headers are sent already: the failure is the stream's last event.
        yield encode(("error", {"error": err.as_dict()}))
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
