from pathlib import Path

import yaml

from kgrag_runtime.schema_export import EVENTS, rendered_schemas

ROOT = Path(__file__).resolve().parents[2] / "schemas"


def test_schema_files_match_the_models() -> None:
    for name, text in rendered_schemas().items():
        path = ROOT / "events" / name
        assert path.exists(), f"missing {path}: run `uv run python -m kgrag_runtime.schema_export`"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path} is out of date: run `uv run python -m kgrag_runtime.schema_export`"
        )


def test_every_topic_is_declared_with_its_schema() -> None:
    topics = yaml.safe_load((ROOT / "topics.yaml").read_text())["topics"]
    assert set(topics) == set(EVENTS)
    for topic, spec in topics.items():
        # Document events keep one document's events in order; resolution events one cluster's.
        assert spec["key"] == ("entity_id" if topic == "entities.changed" else "doc_id")
        assert (ROOT / spec["schema"]).exists()
