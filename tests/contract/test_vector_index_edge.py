"""`EdgeVectorIndex` against the `VectorIndex` contract, plus Qdrant-Edge-specific behaviour."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgrag_adapters.qdrant_edge.vector_index import EdgeVectorIndex, point_id_for
from kgrag_testing.contracts.vector_index import (
    ALLOWED,
    DIMENSION,
    VectorIndexContract,
    VectorIndexFactory,
    chunk_ids,
    point,
    vec,
)


@pytest.fixture
def index_factory(tmp_path: Path) -> Iterator[VectorIndexFactory]:
    opened: list[EdgeVectorIndex] = []

    def make(path: Path | None = None) -> EdgeVectorIndex:
        index = EdgeVectorIndex(path or tmp_path / f"fresh-{len(opened)}", DIMENSION)
        opened.append(index)
        return index

    yield make
    for index in opened:
        index.close()


class TestEdgeVectorIndexContract(VectorIndexContract):
    pass


def test_point_id_is_a_stable_uuid() -> None:
    assert point_id_for("ch_1") == point_id_for("ch_1")
    assert point_id_for("ch_1") != point_id_for("ch_2")
    # Pinned: point IDs are on disk, a change here orphans every existing shard's points.
    assert point_id_for("ch_1") == "714a093a-0ab2-5325-b2d6-015b511c1baa"


def test_rejects_non_finite_and_zero_vectors(tmp_path: Path) -> None:
    with EdgeVectorIndex(tmp_path / "v", DIMENSION) as index:
        for bad in (vec(float("nan")), vec(float("inf")), vec()):
            with pytest.raises(ValueError, match="vector"):
                index.upsert([point("c1", bad)])
        assert index.count() == 0


def test_rejects_a_bare_string_as_acl_list(tmp_path: Path) -> None:
    with EdgeVectorIndex(tmp_path / "v", DIMENSION) as index, pytest.raises(TypeError):
        index.search(vec(1.0), ALLOWED, 10)


def test_reopening_with_another_dimension_fails(tmp_path: Path) -> None:
    EdgeVectorIndex(tmp_path / "v", DIMENSION).close()
    with pytest.raises(Exception, match="size"):  # the engine raises a plain Exception
        EdgeVectorIndex(tmp_path / "v", DIMENSION * 2)


def test_closed_index_refuses_work(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path / "v", DIMENSION)
    index.close()
    index.close()
    with pytest.raises(RuntimeError, match="closed"):
        index.count()


def test_another_process_sees_the_data_after_close(tmp_path: Path) -> None:
    where = tmp_path / "shared"
    with EdgeVectorIndex(where, DIMENSION) as index:
        index.upsert([point("c1", vec(1.0)), point("c2", vec(0.0, 1.0))])
    reader = (
        "import sys; from pathlib import Path\n"
        "from kgrag_adapters.qdrant_edge.vector_index import EdgeVectorIndex\n"
        f"with EdgeVectorIndex(Path(sys.argv[1]), {DIMENSION}) as index:\n"
        "    print(index.count(), index.ids_for_doc('doc-1'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", reader, str(where)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "2 ['c1', 'c2']"
    with EdgeVectorIndex(where, DIMENSION) as index:
        assert chunk_ids(index.search(vec(1.0), [ALLOWED], 1)) == ["c1"]


def test_the_optimizer_runs_once_enough_points_were_written(tmp_path: Path) -> None:
    # Without an optimizer run the engine never builds its HNSW graph and every search scans every vector.
    from unittest import mock

    from kgrag_adapters.qdrant_edge.vector_index import EdgeTuning

    with EdgeVectorIndex(tmp_path / "v", DIMENSION, tuning=EdgeTuning(optimize_after_points=5)) as index:
        with mock.patch.object(index, "optimize", wraps=index.optimize) as optimize:
            index.upsert([point(f"c{i}", vec(1.0, i)) for i in range(4)])
            assert optimize.call_count == 0
            index.upsert([point("c4", vec(1.0, 4)), point("c5", vec(1.0, 5))])
            assert optimize.call_count == 1
            index.upsert([point("c6", vec(1.0, 6))])
            assert optimize.call_count == 1  # the count starts again after a run
        assert chunk_ids(index.search(vec(1.0, 6), [ALLOWED], 1)) == ["c6"]
        assert chunk_ids(index.search(vec(1.0, 6), [ALLOWED], 1, exact=True)) == ["c6"]
