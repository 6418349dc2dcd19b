"""Settings that would silently misconfigure an engine are refused at start-up (issue 16, item 6)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kgrag_runtime.settings import KgragSettings


@pytest.mark.parametrize("name", ["chunks", "kgrag", "my-kgrag-chunks", "Kgrag-chunks", "kgrag-chunks blue"])
def test_an_opensearch_index_outside_the_template_pattern_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="opensearch_index"):
        KgragSettings(opensearch_index=name)


@pytest.mark.parametrize("name", ["kgrag-chunks", "kgrag-chunks-blue", "kgrag-chunks_2026.12"])
def test_names_the_template_covers_are_accepted(name: str) -> None:
    assert KgragSettings(opensearch_index=name).opensearch_index == name
