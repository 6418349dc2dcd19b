"""`kgrag serve` prints a development admin token (for the web app's sign-in) only when it made the signing key
itself; with a configured KGRAG_AUTH_SECRET it prints none."""

from __future__ import annotations

import pytest
from rich.console import Console

from kgrag_query_api.server import verifier_for

PREFIX = "Admin token (12 h): "


def test_without_a_secret_a_working_admin_token_is_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KGRAG_AUTH_SECRET", raising=False)
    verifier = verifier_for(Console(stderr=True))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith(PREFIX)]
    assert len(lines) == 1
    who = verifier.verify("Bearer " + lines[0].removeprefix(PREFIX))
    assert who.caller.admin and "admin" in who.scopes


def test_with_a_configured_secret_no_token_is_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KGRAG_AUTH_SECRET", "a-configured-production-secret-of-some-length")
    verifier = verifier_for(Console(stderr=True))
    captured = capsys.readouterr()
    assert PREFIX not in captured.err + captured.out
    assert verifier.key == "a-configured-production-secret-of-some-length"  # the configured key signs, not a dev one
