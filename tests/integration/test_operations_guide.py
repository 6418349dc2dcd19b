"""docs/operations.md runs as written (issue 16, item 8): every shell example of the operations guide, in
page order, against `make stack` on the dev servers — so the guide cannot drift from what the services
do. Only steps that need what this machine cannot have (a Docker engine, a Kubernetes cluster, an AWS
account) are skipped, each with its reason; an entry that matches no step any more fails the test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.docs.doc_blocks import Step
from tests.docs.test_docs_commands import _env, _report, _workdir, run_pages
from tests.integration.stack_support import Stack, dev_env, free_ports, running_stack

pytestmark = pytest.mark.integration

PAGE = "docs/operations.md"
STACK_STEP = (PAGE, "make stack")
_DOCKER = "needs a Docker engine (there is none here); tests/deploy checks the files statically"
_KUBERNETES = "needs a Kubernetes cluster (none here); tests/deploy renders and validates the chart"
SKIPPED_STEPS: dict[tuple[str, str], str] = {
    STACK_STEP: "the test runs `make stack` itself, on free ports and under a name of its own, and stops it "
    "(`make stack-stop`, no process left) at the end",
    (PAGE, "docker build"): _DOCKER,
    (PAGE, "docker compose up"): _DOCKER,
    (PAGE, "kubectl create namespace"): _KUBERNETES,
    (PAGE, "helm upgrade kgrag"): _KUBERNETES + " (the replay's offset reset runs against a Helm release)",
    (PAGE, "# compose"): "a rebuild run as a compose service or a Kubernetes Job; the stack's own "
    "`admin rebuild` step runs",
    (PAGE, "cd terraform/environments/example"): "needs an AWS account and the provider registry; "
    "tests/deploy/test_deploy_terraform.py checks the modules",
}
# The addresses the page shows (docker-compose.yml's ports) → the stack's.
SHOWN_QUERY, SHOWN_GATEWAY, SHOWN_OPS = 8000, 8080, 9101
WORKERS = 6


def _rewrites(base: int) -> dict[str, str]:
    shown = {SHOWN_QUERY: base, SHOWN_GATEWAY: base + 1}
    shown.update({SHOWN_OPS + i: base + 2 + i for i in range(WORKERS)})
    return {f"127.0.0.1:{a}": f"127.0.0.1:{b}" for a, b in shown.items()}


@pytest.mark.timeout(900)
def test_the_operations_guide_runs_as_written(tmp_path: Path) -> None:
    work, env = _workdir(tmp_path), _env(tmp_path)
    base = free_ports()
    started: list[Stack] = []

    @contextmanager
    def start_stack(_: Step) -> Iterator[Stack]:
        with running_stack(work / ".stack", dev_env(), base=base) as stack:
            started.append(stack)
            yield stack

    failures, outcomes, used = run_pages(
        (PAGE,),
        work,
        env,
        base,
        tmp_path / "state",
        skipped_pages={},
        skipped_steps=SKIPPED_STEPS,
        starters={STACK_STEP: start_stack},
        rewrites=_rewrites(base),
    )
    assert started, "the page no longer starts the stack with `make stack`"
    stale = set(SKIPPED_STEPS) - used
    assert not stale, f"skip entries that match no step any more: {stale}"
    assert not failures, _report(failures, outcomes)
    assert len(outcomes) >= 10, f"only {len(outcomes)} steps ran"  # the page's commands ran, not just skips
