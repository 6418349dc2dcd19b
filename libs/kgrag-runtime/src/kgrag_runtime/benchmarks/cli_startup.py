"""How long a `kgrag` command takes from a cold process, as a user runs it (issue 10, a fast CLI).

Each command runs `--runs` times in a fresh `python -m kgrag_runtime.cli` process on an index that exists
(build one with `kgrag ingest corpora/northwind/documents.jsonl --data-dir DIR`). Reported: wall time and
the process's CPU time (user + system), median and range; CPU time is the better number on a busy machine.
Two same-run baselines go first: the interpreter alone (`python -c pass`) and importing the embedded app
(`python -c "import kgrag_runtime.app"`), so a loaded machine's figures can be read against them.

`--baseline-src DIR` runs the same commands on the code of another checkout (its libs/*/src and
services/*/src first on PYTHONPATH, same virtual environment): the same-run "before". The embedded
PostgreSQL is stopped before each code's first run, so "first call" includes starting it.

    python -m kgrag_runtime.benchmarks.cli_startup --data-dir .kgrag-demo --runs 5 --baseline-src /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kgrag_adapters.postgres.lifetime import running_postmaster, stop_postmaster, supervisor_running

# Same-run baselines: a whole python process, not a kgrag command (no data dir).
BASELINES: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import kgrag_runtime.app'": ["-c", "import kgrag_runtime.app"],
}
COMMANDS: dict[str, list[str]] = {
    "kgrag --help": ["--help"],
    "kgrag search": ["search", "Leipzig warehouse capacity pallet positions", "--top-k", "3", "--admin", "--json"],
    "kgrag ask": [
        "ask",
        "Who is the current on-call owner of Atlas?",
        "--principal",
        "sam.ortiz",
        "--group",
        "engineering",
        "--json",
    ],
}


def _env(baseline_src: Path | None) -> dict[str, str]:
    # As a user's shell runs it: cached bytecode written and reused. With PYTHONDONTWRITEBYTECODE (set in
    # some sandboxes and CI images) every call compiles about 2,000 modules again, which was most of a
    # `kgrag search`'s CPU time in a profile; the first call still compiles what no earlier run cached.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGRAG_") and k != "PYTHONDONTWRITEBYTECODE"}
    if baseline_src is not None:
        paths = sorted(str(p) for p in [*baseline_src.glob("libs/*/src"), *baseline_src.glob("services/*/src")])
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _run_once(args: list[str], data_dir: Path, env: dict[str, str], *, baseline: bool = False) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    extra = [] if args == ["--help"] else ["--data-dir", str(data_dir)]
    argv = [sys.executable, *args] if baseline else [sys.executable, "-m", "kgrag_runtime.cli", *args, *extra]
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{args[0]} failed: {proc.stderr.decode()[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _stop_embedded_postgres(data_dir: Path) -> None:
    pgdata = data_dir / "postgres"
    stop_postmaster(pgdata)
    deadline = time.monotonic() + 30
    while (supervisor_running(data_dir) or running_postmaster(pgdata)) and time.monotonic() < deadline:
        time.sleep(0.1)


def measure(data_dir: Path, runs: int, baseline_src: Path | None) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    codes = [("before", baseline_src)] if baseline_src is not None else []
    baselines = [(label, args, True) for label, args in BASELINES.items()]
    for code, src in [*codes, ("after", None)]:
        env = _env(src)
        _stop_embedded_postgres(data_dir)
        for label, args, baseline in [*baselines, *((label, args, False) for label, args in COMMANDS.items())]:
            samples = [_run_once(args, data_dir, env, baseline=baseline) for _ in range(runs)]
            walls, cpus = [w for w, _ in samples], [c for _, c in samples]
            rows.append(
                {
                    "code": code,
                    "command": label,
                    "runs": runs,
                    "first_wall_s": walls[0],
                    "wall_median_s": statistics.median(walls[1:] or walls),
                    "wall_min_s": min(walls),
                    "cpu_median_s": statistics.median(cpus[1:] or cpus),
                    "load_average": os.getloadavg()[0],
                }
            )
    _stop_embedded_postgres(data_dir)
    return rows


def markdown(rows: list[dict[str, object]]) -> str:
    lines = [
        "| code | command | runs | first call wall s | later calls wall s (median) | min wall s | CPU s (median) "
        "| load avg |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['code']} | {r['command']} | {r['runs']} | {r['first_wall_s']:.2f} | {r['wall_median_s']:.2f} | "
            f"{r['wall_min_s']:.2f} | {r['cpu_median_s']:.2f} | {r['load_average']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline-src", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench-results/cli"))
    ns = parser.parse_args()
    rows = measure(ns.data_dir.resolve(), ns.runs, ns.baseline_src)
    ns.out.mkdir(parents=True, exist_ok=True)
    (ns.out / "cli.json").write_text(json.dumps(rows, indent=2))
    table = markdown(rows)
    (ns.out / "cli.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
