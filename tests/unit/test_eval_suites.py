"""Eval suites are names from a registry, and a run's settings point at a throwaway index with no model."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.evaluation.service import isolated_settings
from kgrag_runtime.evaluation.suites import BUNDLED_SUITES_DIR, SUITES, EvalConfig, suite_named
from kgrag_runtime.settings import KgragSettings


@pytest.mark.parametrize("name", ["../northwind", "/etc/passwd", "northwind/questions.jsonl", "NORTHWIND", "x" * 65])
def test_anything_but_a_registered_name_is_refused(name: str) -> None:
    with pytest.raises(KgragError) as err:
        suite_named(name)
    assert err.value.code is ErrorCode.INVALID_QUERY


def test_the_bundled_suites_are_installed_in_the_repository() -> None:
    for name in SUITES:  # positive control: the registry's files exist where the default points
        questions, corpus, book = suite_named(name).paths(BUNDLED_SUITES_DIR)
        assert questions.is_file() and all(c.is_file() for c in corpus) and book is not None and book.is_file()


def test_a_suite_missing_from_a_deployment_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(KgragError) as err:
        suite_named("northwind").paths(tmp_path)
    assert err.value.code is ErrorCode.NOT_FOUND


def test_the_config_is_bounded_and_closed() -> None:
    assert EvalConfig().model_dump() == {"budget_tokens": 2000, "graph": True, "reply_book": False}
    for bad in ({"budget_tokens": 10}, {"graph": "yes"}, {"questions": "/etc/passwd"}):
        with pytest.raises(ValidationError):
            EvalConfig.model_validate(bad)


def test_a_run_gets_its_own_index_and_no_model(tmp_path: Path) -> None:
    serving = KgragSettings(
        data_dir=Path("/srv/kgrag"),
        pg_dsn=SecretStr("postgresql://serving/kgrag"),
        kek=SecretStr("k" * 44),
        llm_base_url="http://llm.example/v1",
        llm_model="m",
        llm_price_input_per_mtok=3.0,
        chunk_max_tokens=150,
    )
    run = isolated_settings(serving, tmp_path / "index", None, graph=False)
    assert run.data_dir == tmp_path / "index" and run.pg_dsn is None and run.kek is None
    assert run.runtime == "embedded" and not run.llm_configured
    assert run.extraction_enabled is False  # no graph configuration: nothing to extract
    assert (run.chunk_max_tokens, run.llm_price_input_per_mtok) == (150, 3.0)  # the serving choices stay
    book = tmp_path / "book.jsonl"
    with_book = isolated_settings(serving, tmp_path / "index", book, graph=True)
    assert with_book.extraction_enabled and with_book.extraction_reply_book == book
    assert with_book.extraction_priority_sources == ["*"]
