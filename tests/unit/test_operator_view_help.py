"""The CLI's operator views say so in their help (docs/security.md, section 11): they show restricted data to
whoever runs them on the index's machine, with no --principal/--group filter."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kgrag_runtime.cli.app import app

OPERATOR_VIEWS = (["documents"], ["status"], ["entities", "merges"], ["entities", "review"], ["curation"])


@pytest.mark.parametrize("command", OPERATOR_VIEWS, ids=" ".join)
def test_operator_views_say_what_they_show_and_to_whom(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())
    assert "Operator view" in text and "restricted ones included" in text and "admin-only" in text


def test_a_filtered_command_does_not_claim_to_be_an_operator_view() -> None:
    result = CliRunner().invoke(app, ["search", "--help"], terminal_width=200)
    assert result.exit_code == 0 and "Operator view" not in result.output  # the check can fail
