"""Concurrent HTTP load on the embedded query API (issue 10, concurrency), with the same-run baseline.

The API runs in a server process of its own (uvicorn, the real app from `create_app`) on a small synthetic
index; clients are threads in this process, each with its own keep-alive connection, for `duration_s` per
level. Two servers are measured one after the other on the same index:

- `concurrent`: the API as shipped (requests on worker threads, no lock; only writes are serialised);
- `single lock`: the same app with every search and ask behind one lock, as before issue 10 (the baseline).

Scenarios: search; ask with the extractive answerer (no LLM); ask with a FAKE chat model that sleeps
`llm_sleep_s` before answering, as a remote model would (it is not a model: it says "insufficient
evidence"); and searches while 16 clients wait on fake-LLM asks.

    python -m kgrag_runtime.benchmarks.load --docs 60 --levels 1,4,16,64 --out bench-results/load
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgrag_core.acl import Caller
from kgrag_core.graph_retrieval.searcher import GraphSearchResponse
from kgrag_core.ports import ChatMessage
from kgrag_core.search import SearchResponse
from kgrag_runtime.app import KgragApp
from kgrag_runtime.benchmarks.synthetic import WORDS, synthetic_documents
from kgrag_runtime.settings import KgragSettings

KEY = "load-benchmark-key-" + "k" * 32
ISSUER, AUDIENCE = "kgrag-bench", "kgrag"
FAKE_LLM_PREFIX = "/fake-llm"


class SleepingFakeChat:
    """FAKE chat model for the benchmark: waits like a remote model, then declines to answer."""

    def __init__(self, sleep_s: float) -> None:
        self._sleep_s = sleep_s

    @property
    def model_id(self) -> str:
        return "fake-sleeping-llm"

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: object = None) -> str:
        time.sleep(self._sleep_s)
        return '{"insufficient_evidence": true, "sentences": []}'


class SingleLockApp(KgragApp):
    """The baseline: every search and ask behind one lock, as `create_app` did before issue 10."""

    lock: threading.RLock

    def search(self, *args: Any, **kwargs: Any) -> SearchResponse | GraphSearchResponse:
        with self.lock:
            return super().search(*args, **kwargs)

    def ask(self, *args: Any, **kwargs: Any) -> dict[str, object]:
        with self.lock:
            return super().ask(*args, **kwargs)


def _single_lock(kg: KgragApp, lock: threading.RLock) -> KgragApp:
    fields = {name: getattr(kg, name) for name in KgragApp.__dataclass_fields__}
    app = SingleLockApp(**fields)
    app.lock = lock
    return app


def _serve(data_dir: str, port: int, single_lock: bool, llm_sleep_s: float, ready: Any) -> None:
    """The server process: the embedded app on `data_dir`, plus a second view of it with the fake LLM."""
    import dataclasses

    import uvicorn

    from kgrag_query_api.api import create_app
    from kgrag_query_api.auth import TokenVerifier
    from kgrag_query_api.server import stop_cleanly_on_signals
    from kgrag_runtime.wiring import open_embedded

    settings = KgragSettings(
        data_dir=Path(data_dir), extraction_enabled=False, answer_cache_ttl_s=0, pg_idle_shutdown_s=0
    )
    verifier = TokenVerifier(KEY, ISSUER, AUDIENCE, "HS256")
    with stop_cleanly_on_signals(), open_embedded(settings) as kg:
        with_llm = dataclasses.replace(kg, llm=SleepingFakeChat(llm_sleep_s))
        if single_lock:
            lock = threading.RLock()  # one lock per replica, whichever app view a request reaches
            kg, with_llm = _single_lock(kg, lock), _single_lock(with_llm, lock)
        api = create_app(kg, verifier, threads=settings.http_threads)
        api.mount(FAKE_LLM_PREFIX, create_app(with_llm, verifier, threads=settings.http_threads))
        server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning"))
        threading.Thread(target=lambda: (_wait(lambda: server.started, 300), ready.set()), daemon=True).start()
        server.run()


def _wait(done: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)
    return done()


@contextmanager
def _server(data_dir: Path, *, single_lock: bool, llm_sleep_s: float) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_serve, args=(str(data_dir), port, single_lock, llm_sleep_s, ready))
    proc.start()
    try:
        if not ready.wait(300):
            raise RuntimeError("the benchmark server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()  # SIGTERM: the server shuts down and closes its stores
        proc.join(120)


def _queries(n: int) -> list[str]:
    return [
        f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7 + 3) % len(WORDS)]} {WORDS[(i * 13 + 5) % len(WORDS)]}"
        for i in range(n)
    ]


def _token() -> str:
    from kgrag_query_api.auth import TokenVerifier

    return TokenVerifier(KEY, ISSUER, AUDIENCE, "HS256").issue(
        "bench", groups=["engineering"], scopes=["search", "ask"]
    )


def _clients(base: str, path: str, body: Callable[[int], dict[str, object]], clients: int, duration_s: float
             ) -> dict[str, float]:  # fmt: skip
    import httpx

    headers = {"Authorization": f"Bearer {_token()}"}
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    ready = threading.Barrier(clients + 1)
    go = threading.Event()
    stop_at = [0.0]

    def client(c: int) -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=300) as http:
            ready.wait()  # every client has its connection pool before the clock starts
            go.wait()
            i = c
            while time.monotonic() < stop_at[0]:
                began = time.perf_counter()
                try:
                    ok = http.post(path, json=body(i)).status_code == 200
                except httpx.HTTPError:
                    ok = False
                took = time.perf_counter() - began
                with lock:
                    if ok:
                        latencies.append(took)
                    else:
                        errors[0] += 1
                i += clients

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    ready.wait()
    stop_at[0] = time.monotonic() + duration_s
    began = time.perf_counter()
    go.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    ordered = sorted(latencies) or [float("nan")]
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": errors[0],
        "throughput_rps": len(latencies) / elapsed,
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
    }


def run_load_benchmark(
    out: Path, *, docs: int = 60, levels: Sequence[int] = (1, 4, 16, 64), duration_s: float = 3.0,
    llm_sleep_s: float = 0.3,
) -> dict[str, object]:  # fmt: skip
    from kgrag_runtime.wiring import open_embedded

    queries = _queries(97)

    def search(i: int) -> dict[str, object]:
        return {"query": queries[i % len(queries)], "top_k": 10}

    def ask(i: int) -> dict[str, object]:
        return {"question": f"What about {queries[i % len(queries)]}?"}

    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "index"
        settings = KgragSettings(data_dir=data_dir, extraction_enabled=False, pg_idle_shutdown_s=0)
        with open_embedded(settings) as kg:
            outcomes = kg.ingest(list(synthetic_documents(docs)))
            chunks = sum(o.chunks_total for o in outcomes)
            assert kg.search("atlas", Caller(admin=True)).hits  # the index answers before we measure it
        for mode, single in (("concurrent", False), ("single lock", True)):
            with _server(data_dir, single_lock=single, llm_sleep_s=llm_sleep_s) as base:
                _clients(base, "/v1/search", search, 2, 1.0)  # warm-up: model, caches, connections
                for scenario, path, body in (
                    ("search", "/v1/search", search),
                    ("ask, extractive", "/v1/ask", ask),
                    (f"ask, FAKE LLM sleeping {llm_sleep_s:.1f} s", f"{FAKE_LLM_PREFIX}/v1/ask", ask),
                ):
                    for n in levels:
                        rows.append({"mode": mode, "scenario": scenario, **_clients(base, path, body, n, duration_s)})
                rows.append({"mode": mode, "scenario": "search, while 16 clients wait on FAKE-LLM asks",
                             **_mixed(base, search, ask, duration_s)})  # fmt: skip
    results: dict[str, object] = {
        "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end",
        "documents": docs,
        "chunks": chunks,
        "duration_s_per_level": duration_s,
        "rows": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "load.json").write_text(json.dumps(results, indent=2))
    (out / "load.md").write_text(load_markdown(results) + "\n")
    return results


def _mixed(base: str, search: Callable[[int], dict[str, object]], ask: Callable[[int], dict[str, object]],
           duration_s: float) -> dict[str, float]:  # fmt: skip
    """4 search clients measured while 16 others keep fake-LLM asks in flight."""
    background = threading.Thread(target=_clients, args=(base, f"{FAKE_LLM_PREFIX}/v1/ask", ask, 16, duration_s + 1))
    background.start()
    time.sleep(0.5)
    measured = _clients(base, "/v1/search", search, 4, duration_s)
    background.join()
    return measured


def load_markdown(results: dict[str, object]) -> str:
    rows = results["rows"]
    assert isinstance(rows, list)
    lines = [
        f"Machine: {results['machine']}; index: {results['documents']} synthetic documents, {results['chunks']} "
        f"chunks; {results['duration_s_per_level']} s per level.",
        "",
        "| scenario | server | clients | requests | errors | req/s | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['scenario']} | {r['mode']} | {r['clients']} | {r['requests']} | {r['errors']} | "
            f"{r['throughput_rps']:.1f} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=60)
    parser.add_argument("--levels", default="1,4,16,64")
    parser.add_argument("--duration-s", type=float, default=3.0)
    parser.add_argument("--llm-sleep-s", type=float, default=0.3)
    parser.add_argument("--out", type=Path, default=Path("bench-results/load"))
    ns = parser.parse_args()
    results = run_load_benchmark(
        ns.out,
        docs=ns.docs,
        levels=[int(x) for x in ns.levels.split(",") if x.strip()],
        duration_s=ns.duration_s,
        llm_sleep_s=ns.llm_sleep_s,
    )
    print(load_markdown(results))


if __name__ == "__main__":
    main()
