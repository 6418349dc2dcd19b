"""Every shell and curl example of README.md and docs/*.md runs as written and still shows what the page
says it shows (tests/docs/README.md: the convention, and why each skipped block is skipped).

One shared working folder for all pages, in page order, as a reader who follows them one after the other:
the pages build the demo index themselves (getting-started's first commands), and a served API on a copy
of it answers the curl examples. Variables and functions a step defines reach the later steps (KGRAG_*
settings only within their page).
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.doc_blocks import Step, steps_of
from tests.docs.expected_output import missing
from tests.pipeline.cli_runner import cli_env

REPO = Path(__file__).resolve().parents[2]
# The order a reader follows; every page must be listed (a new page is then either run or skipped on purpose).
PAGES = (
    "docs/getting-started.md",
    "README.md",
    "docs/knowledge-graph.md",
    "docs/evaluation.md",
    "docs/configuration.md",
    "docs/http-api.md",
    "docs/mcp.md",
    "docs/web-app.md",
    "docs/connector-sdk.md",
    "docs/extraction.md",
    "docs/connectors.md",
    "docs/architecture.md",
    "docs/security.md",
    "docs/qdrant.md",
    "docs/benchmarks.md",
    "docs/dev-services.md",
    "docs/operations.md",
)
# Pages whose commands need what CI's docs run cannot give them; their own suites cover them.
SKIPPED_PAGES = {
    "docs/operations.md": "runs against `make stack` on the dev servers: tests/integration/test_operations_guide.py",
    "docs/dev-services.md": "starts and stops the shared dev servers; `make test` itself runs services.sh",
    "docs/benchmarks.md": "benchmarks take minutes on an idle machine; `make bench` is their entry point",
}
_SERVER = "starts `kgrag serve`, which runs until stopped"
# The step that starts the server the curl examples talk to: the test starts it itself, in the background,
# with the step's `export`s, on a copy of the demo index (so the CLI examples keep theirs), on a free port.
SERVE_STEP = ("docs/http-api.md", "export KGRAG_AUTH_SECRET")
# Single steps that cannot run here, by page and a piece of their first line; each with its reason. A stale
# entry (no such step any more) fails the test, so this list stays short and true.
SKIPPED_STEPS: dict[tuple[str, str], str] = {
    ("README.md", "make demo"): "installs and builds the demo: the steps of getting-started.md are what it runs",
    ("docs/getting-started.md", "make demo"): "the same: the commands right below it are what it runs",
    ("docs/getting-started.md", "export KGRAG_LLM_BASE_URL"): "needs an OpenAI-compatible LLM endpoint",
    ("docs/extraction.md", "export KGRAG_LLM_BASE_URL"): "needs an OpenAI-compatible LLM endpoint and prices",
    ("docs/extraction.md", "KGRAG_LLM_RECORD_DIR"): "records a real model's replies: needs an LLM endpoint",
    ("docs/evaluation.md", "make eval"): "the full evaluation (minutes); tests/pipeline/test_bundled_corpus_eval.py",
    ("docs/evaluation.md", "make eval-graph"): "the graph evaluation with the reply book (minutes)",
    ("docs/evaluation.md", "--data-dir .kgrag-docs-eval"): "the full evaluation (minutes)",
    SERVE_STEP: _SERVER + ": the test starts it in the background with these settings (SERVE_STEP)",
    ("docs/http-api.md", "uv run kgrag serve"): _SERVER + "; the curl examples use the one SERVE_STEP starts",
    ("docs/extraction.md", "uv run kgrag eval --extraction-gold"): "scores extraction on a fresh index of the whole "
    "corpus (about 90 s on 2 cores): `make eval` runs it",
    ("README.md", "uv run kgrag eval"): "the full evaluation (minutes) and a server that runs until stopped",
}
DOC_PORT = "8765"  # the port every curl example uses; rewritten to the served API's free port
STEP_TIMEOUT_S = 600


@dataclass
class Outcome:
    step: Step
    rc: int
    stdout: str
    stderr: str
    seconds: float


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _workdir(tmp: Path) -> Path:
    """A checkout as the docs assume one (their paths are relative to the repository root), whose data
    folders are this test's own."""
    work = tmp / "repo"
    work.mkdir()
    for name in ("corpora", "docs", "schemas", "scripts", "Makefile", "pyproject.toml"):
        (work / name).symlink_to(REPO / name)
    (tmp / "home").mkdir()
    return work


def _env(tmp: Path) -> dict[str, str]:
    env = cli_env()
    venv_bin = str(Path(sys.executable).parent)
    env.update(
        COLUMNS="80",  # the pages show output as an 80-column terminal prints it
        HOME=str(tmp / "home"),
        PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}",
        TERM="dumb",
    )
    return env


# `uv run X` runs X from this environment (already installed and synced), so a step costs what it costs.
_PRELUDE = r"""
uv() { if [ "$1" = run ]; then shift; [ "$1" = --frozen ] && shift; "$@"; else command uv "$@"; fi; }
"""


def doc_port_rewrites(port: int) -> dict[str, str]:
    """The served API's address for the one every curl example uses."""
    return {f"127.0.0.1:{DOC_PORT}": f"127.0.0.1:{port}", f"localhost:{DOC_PORT}": f"127.0.0.1:{port}"}


def _script(step: Step, state: Path, rewrites: Mapping[str, str]) -> str:
    commands = step.commands
    for shown, real in rewrites.items():
        commands = commands.replace(shown, real)
    return "\n".join(
        [
            f". {state}/env.sh 2>/dev/null || true",
            f". {state}/functions.sh 2>/dev/null || true",
            _PRELUDE,
            # Save what this step defined for the next one, whatever happens.
            f'trap \'export -p | grep -v "^declare -[a-z]*r" > {state}/env.sh; '
            f"declare -f > {state}/functions.sh' EXIT",
            "set -a -e -o pipefail",  # every variable reaches later steps; the first failing command fails it
            commands,
        ]
    )


def _run(step: Step, work: Path, env: dict[str, str], state: Path, rewrites: Mapping[str, str]) -> Outcome:
    started = time.monotonic()
    # A session of its own, so that a step that runs too long is stopped with every process it started.
    proc = subprocess.Popen(
        ["bash", "-c", _script(step, state, rewrites)],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=STEP_TIMEOUT_S)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        rc, stderr = 124, f"{stderr}\n(stopped after {STEP_TIMEOUT_S} s)"
    outcome = Outcome(step, rc, stdout, stderr, time.monotonic() - started)
    print(f"{step.where}: exit {rc} in {outcome.seconds:.1f} s", file=sys.stderr, flush=True)
    return outcome


@contextmanager
def _served_copy(work: Path, env: dict[str, str], port: int) -> Iterator[None]:
    """`kgrag serve` on a copy of the demo index (the CLI examples keep using theirs), with `env`."""
    api_dir = work / ".kgrag-demo-api"
    # `cp -a`, not copytree: the embedded PostgreSQL runs as its own user when kgrag runs as root, and the copy
    # must stay that user's.
    subprocess.run(["cp", "-a", str(work / ".kgrag-demo"), str(api_dir)], check=True, timeout=300)
    log = (work.parent / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "kgrag_runtime.cli", "serve", "--data-dir", str(api_dir), "--port", str(port)],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if _answers(port):
                break
            assert server.poll() is None, (work.parent / "serve.log").read_text()
            assert time.monotonic() < deadline, "kgrag serve did not answer /healthz within 120 s"
            time.sleep(0.5)
        yield
    finally:
        # SIGINT, as Ctrl+C: the server unwinds and stops its embedded PostgreSQL. (On SIGTERM, uvicorn re-raises
        # the signal after its shutdown and the process dies before the store's cleanup runs.)
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _skip_entry(step: Step, skipped_steps: Mapping[tuple[str, str], str]) -> tuple[str, str] | None:
    first = next((line for line in step.commands.splitlines() if line.strip()), "")
    matching = [key for key in skipped_steps if key[0] == step.doc and key[1] in first]
    return max(matching, key=lambda key: len(key[1]), default=None)  # `make eval-graph` over `make eval`


def _report(failures: list[str], outcomes: list[Outcome]) -> str:
    slowest = sorted(outcomes, key=lambda o: -o.seconds)[:5]
    timing = ", ".join(f"{o.step.where} {o.seconds:.0f} s" for o in slowest)
    return "\n\n".join([*failures, f"{len(outcomes)} steps run; slowest: {timing}"])


def test_pages_list_every_doc() -> None:
    on_disk = {"README.md", *(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))}
    assert set(PAGES) == on_disk


@pytest.mark.timeout(1500)
def test_every_documented_command_runs_as_written(tmp_path: Path) -> None:
    work, env, port = _workdir(tmp_path), _env(tmp_path), _free_port()
    failures, outcomes, used_skips = run_pages(PAGES, work, env, port, tmp_path / "state")
    stale = set(SKIPPED_STEPS) - used_skips
    assert not stale, f"skip entries that match no step any more: {stale}"
    assert not failures, _report(failures, outcomes)


# A skipped step that starts something in the background the way a test can, for the steps after it.
Starter = Callable[[Step], AbstractContextManager[object]]


def run_pages(
    pages: tuple[str, ...],
    work: Path,
    env: dict[str, str],
    port: int,
    state: Path,
    *,
    skipped_pages: Mapping[str, str] = SKIPPED_PAGES,
    skipped_steps: Mapping[tuple[str, str], str] = SKIPPED_STEPS,
    starters: Mapping[tuple[str, str], Starter] | None = None,
    rewrites: Mapping[str, str] | None = None,
) -> tuple[list[str], list[Outcome], set[tuple[str, str]]]:
    """Run the pages' steps in order; what failed (with why), every outcome, the skip entries used.

    `starters`: what a skipped step starts instead (default: SERVE_STEP's server on `port`); `rewrites`:
    addresses in the commands replaced by the real ones (default: the curl examples' port)."""
    if starters is None:
        starters = {SERVE_STEP: lambda step: _served_copy(work, {**env, **_exports(step.commands)}, port)}
    rewrites = doc_port_rewrites(port) if rewrites is None else rewrites
    state.mkdir(exist_ok=True)
    failures: list[str] = []
    outcomes: list[Outcome] = []
    used_skips: set[tuple[str, str]] = set()
    with ExitStack() as stack:
        for page in pages:
            if page in skipped_pages:
                continue
            _forget_settings(state)
            for step in steps_of(REPO / page, page):
                skip = _skip_entry(step, skipped_steps)
                if skip is not None and skip in starters:
                    # The page's own server start, run the way a test can: in the background (SERVE_STEP: with
                    # the step's settings, on a copy of the index it names).
                    stack.enter_context(starters[skip](step))
                if skip is not None:
                    used_skips.add(skip)
                    continue
                outcome = _run(step, work, env, state, rewrites)
                outcomes.append(outcome)
                if problem := _problem(outcome):
                    print(problem, file=sys.stderr, flush=True)  # as it happens: a long run shows its progress
                    failures.append(problem)
    return failures, outcomes, used_skips


def _exports(commands: str) -> dict[str, str]:
    """The `export NAME=VALUE …` settings of a step."""
    out: dict[str, str] = {}
    for line in commands.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            out.update(word.split("=", 1) for word in words[1:] if "=" in word)  # type: ignore[misc]
    return out


def _forget_settings(state: Path) -> None:
    """Each page names its own index and settings: a KGRAG_* export of an earlier page must not make a later
    page's example work that would fail for a reader who opens that page first. (Other variables, such as
    the tokens of http-api.md, carry on, as for a reader who follows the pages in order.)"""
    env = state / "env.sh"
    if env.exists():
        kept = [line for line in env.read_text().splitlines() if not line.startswith("declare -x KGRAG_")]
        env.write_text("\n".join(kept) + "\n")


def _problem(outcome: Outcome) -> str | None:
    step = outcome.step
    expected_rc = 2 if step.expected is not None and step.expected.shows_an_error else 0
    if outcome.rc != expected_rc:
        return (
            f"{step.where}: exit {outcome.rc}, not {expected_rc}\n$ {step.commands.strip()}\n"
            f"{outcome.stdout[-1500:]}{outcome.stderr[-1500:]}"
        )
    if step.expected is None:
        return None
    lacking = missing(step.expected, outcome.stdout, outcome.stderr)
    if not lacking:
        return None
    return (
        f"{step.where}: the output lacks what {step.doc}:{step.expected.line} shows: {lacking[:6]}\n"
        f"$ {step.commands.strip()}\n{outcome.stdout[-2500:]}{outcome.stderr[-800:]}"
    )


def _answers(port: int) -> bool:
    """Whether the served API answers /healthz; a refused or reset connection means not yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False
