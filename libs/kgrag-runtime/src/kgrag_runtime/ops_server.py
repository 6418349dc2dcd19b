"""The operations endpoint of a worker process: /healthz, /readyz and /metrics on one small port.

Liveness says the process loop is turning; readiness says its dependencies answer and it is keeping
up (consumer lag under the configured bound). Kubernetes probes and Prometheus scrape these.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

Check = Callable[[], dict[str, object]]


class OpsServer:
    def __init__(self, host: str, port: int, *, live: Check, ready: Check, registry: CollectorRegistry) -> None:
        checks = {"/healthz": live, "/readyz": ready}

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/metrics":
                    self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                    return
                check = checks.get(self.path)
                if check is None:
                    self._send(404, b'{"error": "not found"}', "application/json")
                    return
                try:
                    report = check()
                except Exception as err:  # noqa: BLE001 - a failing check is a report, not a crash
                    report = {"ok": False, "error": f"{type(err).__name__}: {err}"}
                body = json.dumps(report, default=str).encode("utf-8")
                self._send(200 if report.get("ok") else 503, body, "application/json")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return  # probes every few seconds would flood the log

        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="ops-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> OpsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
