"""How fast each connector turns its files into documents (issue 14): documents/s and MB/s per format.

Only the connector is timed (reading the file, parsing, rendering the stored text), not chunking or
embedding: those are the same for every format and `kgrag bench` measures them. Each format's sample
files (corpora/formats/samples) are read `--runs` times in one process; reported are the median run's
rates over the input bytes (wall clock) and the documents per CPU-second (steadier on a busy machine),
with the machine's load average, because the wall-clock numbers move with it.

    python -m kgrag_runtime.benchmarks.connectors --runs 20 --out bench-results/connectors
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from kgrag_adapters.connectors import iter_path
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument

# Format -> which sample paths it reads (relative to the samples folder).
FORMATS: dict[str, Callable[[Path], list[Path]]] = {
    "pdf": lambda root: sorted(root.rglob("*.pdf")),
    "docx": lambda root: sorted(root.rglob("*.docx")),
    "html": lambda root: sorted(root.rglob("*.html")),
    "transcript (vtt/srt/txt)": lambda root: sorted(
        [*root.rglob("*.vtt"), *root.rglob("*.srt"), *root.rglob("*.transcript.txt")]
    ),
    "tickets (json, csv)": lambda root: sorted([*root.rglob("tickets/*.json"), *root.rglob("tickets/*.csv")]),
    "slack export": lambda root: [root / "slack"],
}


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def _documents(paths: list[Path]) -> Iterator[ConnectorItem]:
    for path in paths:
        yield from iter_path(path)


def measure(samples: Path, runs: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name, pick in FORMATS.items():
        paths = pick(samples)
        if not paths:
            continue
        size = sum(_size(p) for p in paths)
        walls: list[float] = []
        cpus: list[float] = []
        docs = 0
        for _ in range(runs):
            started, cpu = time.perf_counter(), time.process_time()
            items = list(_documents(paths))
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
            failures = [i for i in items if not isinstance(i, SourceDocument)]
            if failures:
                raise SystemExit(f"{name}: the samples did not load: {failures[:3]}")
            docs = len(items)
        wall = statistics.median(walls)
        rows.append(
            {
                "format": name,
                "files": len(paths),
                "documents": docs,
                "input_bytes": size,
                "median_s": round(wall, 6),
                "docs_per_s": round(docs / wall, 1),
                "mb_per_s": round(size / wall / 1e6, 3),
                "docs_per_cpu_s": round(docs / max(statistics.median(cpus), 1e-9), 1),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, default=Path("corpora/formats/samples"))
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load = os.getloadavg()
    cpu_started = time.process_time()
    rows = measure(args.samples, max(1, args.runs))
    machine = {
        "cpus": os.cpu_count(),
        "load_avg_1m_before": round(load[0], 2),
        "cpu_s": time.process_time() - cpu_started,
    }
    lines = [
        f"Connector throughput, {args.runs} runs, median; {machine['cpus']} CPUs, load average {load[0]:.2f} at start.",
        "",
        "| format | files | documents | input KB | documents/s | MB/s | documents/CPU-s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['format']} | {r['files']} | {r['documents']} | {int(r['input_bytes']) / 1000:.1f} "  # type: ignore[call-overload]
        f"| {r['docs_per_s']} | {r['mb_per_s']} | {r['docs_per_cpu_s']} |"
        for r in rows
    ]
    print("\n".join(lines))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "connectors.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
        (args.out / "connectors.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
