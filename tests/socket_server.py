"""An ASGI app on a real socket for a test (uvicorn in a thread): for a browser, or a client that hangs up."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI


@contextmanager
def serving_api(api: FastAPI) -> Iterator[str]:
    """An app on a free port of a real socket (uvicorn in a thread), for a browser; its base URL."""
    server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the API did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
