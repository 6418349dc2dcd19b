"""graph_evidence over HTTP: the chain a multi-hop question walks, hop by hop, as each caller may see it.

Records mapped by tier 1 (no model): Kim Lee is a member of team Falcon (public); only an HR record says
Jordan Blake leads Falcon. The HR reader is the positive control for every probe of the outsider.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

VERIFIER = TokenVerifier(key="paths-key-" + "z" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")
OUTSIDER = {"Authorization": f"Bearer {VERIFIER.issue('sam', groups=['engineering'], scopes=['search', 'ask'])}"}
HR = {"Authorization": f"Bearer {VERIFIER.issue('hana', groups=['hr'], scopes=['search', 'ask'])}"}
SECRET = "Jordan Blake"
RECORDS = [
    {"id": "p-kim", "title": "Person", "source": "records",
     "record": {"type": "person", "fields": {"name": "Kim Lee", "email": "kim@northwind.example", "team": "Falcon"}}},
    {"id": "t-falcon-hr", "title": "Team (HR)", "source": "records", "acl": {"groups": ["hr"]},
     "record": {"type": "team", "fields": {"name": "Falcon", "lead": SECRET}}},
]  # fmt: skip
QUESTION = "Who leads the team that Kim Lee is a member of?"


def _ask(c: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    body = {"question": QUESTION, "mode": "MULTI_HOP", "options": {"include_graph_paths": True, "max_hops": 2}}
    response = c.post("/v1/ask", json=body, headers=headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_graph_paths_show_each_caller_only_the_hops_it_may_read(
    tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder
) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    settings = KgragSettings(data_dir=tmp_path / "index", pg_dsn=pg_dsn, max_document_bytes=20_000)
    with open_embedded(settings, embedder=embedder) as kg, TestClient(create_app(kg, VERIFIER)) as c:
        outcomes = kg.ingest(list(iter_path(path)))
        assert all(o.error_code is None for o in outcomes), [o.as_dict() for o in outcomes]

        insider = _ask(c, HR)
        assert (
            insider["strategy_used"]["route"] == "multi_hop"
            and "graph_expansion" in insider["strategy_used"]["strategies"]
        )
        chains = [p["path"] for p in insider["graph_evidence"]]
        # The positive control: the reader of the HR record sees the chain through it.
        assert any(SECRET in chain and "Kim Lee" in chain for chain in chains), chains
        hr_chunks = {c.chunk_id for c in kg.searcher.documents.chunks_of("t-falcon-hr")}
        leads = [hop for p in insider["graph_evidence"] for hop in p["hops"] if SECRET in json.dumps(hop)]
        assert leads and all(set(hop["supporting_chunks"]) <= hr_chunks for hop in leads)
        assert all(0 < hop["confidence"] <= 1 for p in insider["graph_evidence"] for hop in p["hops"])

        outsider = _ask(c, OUTSIDER)
        assert outsider["graph_evidence"], "the public hop is still shown"
        assert any("Falcon" in p["path"] and "Kim Lee" in p["path"] for p in outsider["graph_evidence"])
        shown = json.dumps(outsider)
        assert SECRET not in shown
        assert not hr_chunks & {c for p in outsider["graph_evidence"] for c in p["supporting_chunks"]}

        # Linked entities on search follow the same rule: a name only restricted evidence holds stays hidden.
        query = {"query": f"{SECRET} and Kim Lee", "include_entities": True}
        seen = {who: c.post("/v1/search", json=query, headers=h).json() for who, h in (("hr", HR), ("out", OUTSIDER))}
        hr_names = {e["name"] for e in seen["hr"]["entities"]}
        assert {SECRET, "Kim Lee"} <= hr_names  # the positive control
        assert all(set(e) == {"entity_id", "name", "type", "score"} for e in seen["hr"]["entities"])
        assert "Kim Lee" in {e["name"] for e in seen["out"]["entities"]}
        assert SECRET not in json.dumps(seen["out"]["entities"])
