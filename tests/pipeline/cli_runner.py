"""Running the real `kgrag` CLI in a subprocess, as a user does, for the pipeline tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any


def cli_env(**settings: str) -> dict[str, str]:
    """This process's environment without any KGRAG_* setting, plus `settings` and a wide, plain terminal."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("KGRAG_")}
    out.update(COLUMNS="200", NO_COLOR="1")  # help texts are not wrapped mid-phrase
    out.update(settings)
    return out


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kgrag_runtime.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )


def json_cli(env: dict[str, str]) -> Callable[..., Any]:
    """`run(*args, expect=0)`: the command with `--json`, its exit code checked, its output parsed."""

    def run(*args: str, expect: int = 0) -> Any:
        proc = run_cli(env, *args, "--json")
        assert proc.returncode == expect, proc.stderr[-2000:] + proc.stdout[-2000:]
        return json.loads(proc.stdout)

    return run
