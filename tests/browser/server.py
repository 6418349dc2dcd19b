"""`kgrag serve` on the bundled corpus, once for every browser test, with tokens for each kind of reader."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from kgrag_query_api.auth import TokenVerifier
from tests.pipeline.cli_runner import cli_env

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora" / "northwind" / "documents.jsonl"
RECORDS = ROOT / "corpora" / "northwind" / "records.jsonl"  # all 53: facts with dates, for timelines and conflicts
START_TIMEOUT_S = 280.0
# The bundled corpus's documents about these subjects (28 of 106): the on-call handover (answers with
# non-ASCII quotes), a leadership-only acquisition (the restricted document), Leipzig's capacity (a conflict),
# Beacon. Ingesting all of it would cost CI a minute; a browser test needing more adds a subject here.
SUBJECTS = ("atlas", "oncall", "osprey", "leadership", "beacon", "lej", "leipzig")


@dataclass(frozen=True, slots=True)
class Server:
    url: str
    verifier: TokenVerifier
    started_s: float  # ingest and start, for the report

    def token(self, user: str, *, groups: tuple[str, ...] = (), scopes: tuple[str, ...] = ("search", "ask")) -> str:
        return self.verifier.issue(user, groups=list(groups), scopes=list(scopes))

    @property
    def admin(self) -> str:
        return self.token("ui-admin", scopes=("admin",))


def corpus_lines() -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)
    chosen = [line for line in lines if any(s in json.loads(line)["id"] for s in SUBJECTS)]
    return chosen + RECORDS.read_text(encoding="utf-8").splitlines(keepends=True)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(data_dir: Path, log_path: Path) -> tuple[Server, subprocess.Popen[bytes]]:
    """Ingest the corpus with the CLI (one batch), then serve it; the auth secret is the test's own, so the
    tests can sign tokens for any reader."""
    started = time.perf_counter()
    secret = secrets.token_urlsafe(32)
    # The embedded PostgreSQL outlives the ingest long enough for the server to attach to it, and is gone
    # soon after the server stops (the default keeps it 5 minutes).
    env = cli_env(KGRAG_DATA_DIR=str(data_dir), KGRAG_AUTH_SECRET=secret, KGRAG_PG_IDLE_SHUTDOWN_S="30")
    corpus = data_dir.parent / "documents.jsonl"
    corpus.write_text("".join(corpus_lines()), encoding="utf-8")
    ingest = subprocess.run(
        [sys.executable, "-m", "kgrag_runtime.cli", "ingest", str(corpus)],
        env=env,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
    )
    assert ingest.returncode == 0, ingest.stderr[-3000:]
    port = free_port()
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgrag_runtime.cli", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()  # the child holds its own descriptor
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"kgrag serve exited with {proc.returncode}: {log_path.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2.0).status_code == 200:
                break
        except httpx.TransportError:
            pass  # not listening yet
        if time.monotonic() > deadline:
            proc.terminate()
            raise AssertionError(f"kgrag serve did not become ready: {log_path.read_text()[-3000:]}")
        time.sleep(0.5)
    verifier = TokenVerifier(secret, "kgrag-local", "kgrag", "HS256")
    return Server(url, verifier, time.perf_counter() - started), proc


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


if __name__ == "__main__":  # a server to run the browser tests against while working on the app
    import signal
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="kgrag-ui-"))
    started, process = start_server(folder / "data", folder / "serve.log")
    print(
        f"KGRAG_TEST_BROWSER_SERVER='{started.url} {started.verifier.key}'  (log: {folder / 'serve.log'})", flush=True
    )
    # SIGTERM as well as Ctrl-C: a shell's background job starts with SIGINT ignored
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: process.terminate())  # the server closes its stores on SIGTERM
    process.wait()
