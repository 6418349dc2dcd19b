"""Write the event JSON Schemas under `schemas/events/` from the pydantic models that validate them.

`python -m kgrag_runtime.schema_export [ROOT]`; a test fails when the files drift from the models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from kgrag_core.events import (
    ACL_CHANGED,
    CHUNKS_CHANGED,
    DOCUMENTS_CHANGED,
    DOCUMENTS_DELETED,
    ENTITIES_CHANGED,
    GRAPH_CHANGED,
)
from kgrag_core.events.model import (
    AclChanged,
    ChunksChanged,
    DocumentChanged,
    DocumentDeleted,
    EntitiesChanged,
    GraphChanged,
)

EVENTS: dict[str, type[BaseModel]] = {
    DOCUMENTS_CHANGED: DocumentChanged,
    DOCUMENTS_DELETED: DocumentDeleted,
    CHUNKS_CHANGED: ChunksChanged,
    ACL_CHANGED: AclChanged,
    GRAPH_CHANGED: GraphChanged,
    ENTITIES_CHANGED: EntitiesChanged,
}


def rendered_schemas() -> dict[str, str]:
    """File name → JSON text, one file per topic and schema version."""
    out: dict[str, str] = {}
    for topic, model in EVENTS.items():
        schema = model.model_json_schema()
        schema["$id"] = f"kgrag/events/{topic}.v1.json"
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        out[f"{topic}.v1.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("schemas/events")
    root.mkdir(parents=True, exist_ok=True)
    for name, text in rendered_schemas().items():
        (root / name).write_text(text, encoding="utf-8")
        print(f"wrote {root / name}")


if __name__ == "__main__":
    main()
