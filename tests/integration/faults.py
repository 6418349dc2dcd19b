"""Fault injection for integration tests: a TCP proxy that can make a real server unreachable."""

from __future__ import annotations

import logging
import selectors
import socket
import threading

log = logging.getLogger(__name__)


class ToggleProxy:
    """Forwards 127.0.0.1:<port> to a real server; `block()` makes it refuse and drop every connection.

    The client under test sees genuine connection errors from the network stack, not a fake adapter.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self._blocked = threading.Event()
        self._stop = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="toggle-proxy", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def block(self) -> None:
        self._blocked.set()
        with self._lock:
            for conn in list(self._open):
                conn.close()
            self._open.clear()

    def unblock(self) -> None:
        self._blocked.clear()

    def close(self) -> None:
        self._stop.set()
        self.block()
        self._thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ)
        while not self._stop.is_set():
            for _key, _ in selector.select(timeout=0.2):
                try:
                    client, _addr = self._listener.accept()
                except BlockingIOError:
                    continue
                if self._blocked.is_set():
                    client.close()
                    continue
                threading.Thread(target=self._pipe_pair, args=(client,), daemon=True).start()
        selector.close()

    def _pipe_pair(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self._target, timeout=5)
        except OSError:
            client.close()
            return
        with self._lock:
            self._open.update((client, upstream))
        done = threading.Event()
        for src, dst in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(src, dst, done), daemon=True).start()
        done.wait()
        with self._lock:
            for s in (client, upstream):
                self._open.discard(s)
                s.close()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, done: threading.Event) -> None:
        try:
            while not done.is_set() and (data := src.recv(65536)):
                dst.sendall(data)
        except OSError as err:
            # block() closes sockets under the pump: that ends it, and the pair is torn down by the caller.
            log.debug("proxy pipe closed: %s", err)
        finally:
            done.set()
