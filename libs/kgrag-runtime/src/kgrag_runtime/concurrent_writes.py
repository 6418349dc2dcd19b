"""Independent writes to different servers, at the same time: each waits on its own server's answer
(OpenSearch's refresh, an S3 round trip), so the batch waits about as long as the slowest one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kgrag-write")


def all_at_once(tasks: Sequence[Callable[[], None]]) -> None:
    """Run every task, wait for all of them, then raise the first failure (none is left running)."""
    if len(tasks) <= 1:
        for task in tasks:
            task()
        return
    futures = [_POOL.submit(task) for task in tasks]
    errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error
