"""Running an operation once more when PostgreSQL chose its transaction as a deadlock's victim.

The victim's transaction is rolled back whole (nothing of it is kept), and the other one goes through, so a
second try normally succeeds; a caller such as the query API's deletion answers it instead of a 500.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from psycopg import errors

T = TypeVar("T")

log = logging.getLogger(__name__)


def deadlocked(err: BaseException) -> bool:
    """Whether `err`, or an error it was raised from, is PostgreSQL's SQLSTATE 40P01."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, errors.DeadlockDetected):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def once_more_on_deadlock(fn: Callable[[], T]) -> T:
    """`fn()`, run a second time (and logged) only when the first try was a deadlock's victim; any other
    error, and a second deadlock, reach the caller as raised."""
    try:
        return fn()
    except Exception as err:  # re-raised unless it wraps SQLSTATE 40P01, whatever wraps it
        if not deadlocked(err):
            raise
        log.warning("deadlock victim, running once more: %s", err)
        return fn()
