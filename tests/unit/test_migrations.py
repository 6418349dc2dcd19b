"""The migration runner: applies each file once, in name order, atomically, under a lock."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from kgrag_adapters.postgres import migrate
from kgrag_adapters.postgres.migrate import MIGRATIONS_DIR, applied_versions, apply_migrations

# Every migration in schemas/postgres/migrations, in order; a new file must be added here on purpose.
ALL = [
    "0001_init",
    "0002_event_times",
    "0003_extraction",
    "0004_resolution",
    "0005_resolution_near",
    "0006_acl_principal_names",
    "0007_visibility_by_evidence",
    "0008_duplicates_outlive_representatives",
    "0009_content_keys",
    "0010_sealed_names",
    "0011_namesakes",
    "0013_query_traces",
    "0014_chunk_embedding_keys",
    "0015_eval_runs",
    "0017_graph_version",
    "0018_scoped_merges_index",
    "0021_document_sources",
    "0026_watch_state",
    "0027_communities",
    "0028_text_graph",
    "0030_text_graph_counts",
    "0031_merge_decided_by",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
TABLES = {
    "acl_classes",
    "documents",
    "document_keys",
    "chunks",
    "embedding_cache",
    "ingest_log",
    "deletion_log",
    "ontology_versions",
    "extraction_cache",
    "chunk_extractions",
    "chunk_minhash",
    "chunk_lsh_bands",
    "kg_entities",
    "kg_communities",
    "kg_community_members",
    "kg_mentions",
    "kg_relations",
    "kg_relation_evidence",
    "kg_claims",
    "kg_claim_evidence",
    "extraction_quarantine",
    "extraction_runs",
    "er_merge_log",
    "er_canonical",
    "er_review_queue",
    "kg_hubs",
    "kg_installation",
    "query_traces",
    "query_feedback",
    "eval_runs",
    "er_split_log",
    "er_senses",
    "watch_files",
    "text_graph_nodes",
    "text_graph_mentions",
    "text_graph_synonyms",
    "text_graph_name_vectors",
    "text_graph_node_passages",
}


def tables(conn: psycopg.Connection[tuple[object, ...]]) -> set[str]:
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {str(r[0]) for r in rows}


def test_applies_the_schema_and_records_it(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert applied_versions(conn) == []
        assert apply_migrations(conn) == ALL
        assert tables(conn) == TABLES | {"schema_migrations"}
        assert applied_versions(conn) == ALL
        row = conn.execute("SELECT applied_at FROM schema_migrations").fetchone()
        assert row is not None
        assert row[0].utcoffset() is not None  # TIMESTAMPTZ


def test_second_run_applies_nothing(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        apply_migrations(conn)
        assert apply_migrations(conn) == []
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # and from a new session
        assert apply_migrations(conn) == []
        assert applied_versions(conn) == ALL


def test_works_on_a_connection_that_is_not_autocommit(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        assert apply_migrations(conn) == ALL
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # committed, not left in a transaction
        assert applied_versions(conn) == ALL


def test_concurrent_runners_apply_each_migration_once(pg_dsn: str) -> None:
    start = threading.Barrier(4, timeout=30)

    def run() -> list[str]:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            start.wait()  # all four connected, then all race for the lock
            return apply_migrations(conn)

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(run) for _ in range(4)]
        results = [f.result() for f in futures]  # re-raises a runner's error here
    assert sorted(results) == [[], [], [], ALL]


def test_applies_new_files_in_name_order(pg_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE a (id INT PRIMARY KEY);")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert apply_migrations(conn, tmp_path) == ["0001_a"]
        # Written out of order, and 0010 depends on 0002: name order (not creation order) makes it work.
        (tmp_path / "0010_c.sql").write_text("CREATE TABLE c (b_id INT REFERENCES b (id));")
        (tmp_path / "0002_b.sql").write_text("CREATE TABLE b (id INT PRIMARY KEY REFERENCES a (id));")
        (tmp_path / "notes.txt").write_text("not a migration")
        assert apply_migrations(conn, tmp_path) == ["0002_b", "0010_c"]
        assert applied_versions(conn) == ["0001_a", "0002_b", "0010_c"]


def test_a_failing_migration_changes_nothing(pg_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "0001_ok.sql").write_text("CREATE TABLE ok (id INT);\nCREATE TABLE ok2 (id INT);")
    (tmp_path / "0002_bad.sql").write_text("CREATE TABLE bad (id INT);\nCREATE TABLEX oops;")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.SyntaxError):
            apply_migrations(conn, tmp_path)
        assert tables(conn) == set()
        assert applied_versions(conn) == []


def test_an_empty_directory_is_an_error(pg_dsn: str, tmp_path: Path) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn, pytest.raises(FileNotFoundError):
        apply_migrations(conn, tmp_path)


def test_the_sql_has_one_home() -> None:
    link = Path(migrate.__file__).parent / "migrations"
    assert link.is_symlink()
    assert not Path(str(link.readlink())).is_absolute()  # relative, so it works in any checkout
    assert MIGRATIONS_DIR.resolve() == (REPO_ROOT / "schemas" / "postgres" / "migrations").resolve()
    assert [p.name for p in migrate.migration_files()] == [f"{v}.sql" for v in ALL]


def test_schema_keeps_times_in_utc_and_rejects_bad_rows(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        apply_migrations(conn)
        conn.execute("INSERT INTO acl_classes (acl_class_id, principals) VALUES ('acl_x', '{public}')")
        row = conn.execute("SELECT created_at, malformed FROM acl_classes").fetchone()
        assert row is not None
        assert row[1] is False
        assert row[0].utcoffset() is not None
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "INSERT INTO documents (doc_id, source, uri, title, version, content_hash, acl_class_id,"
                " status, media_type, byte_length) VALUES ('d', 's', 'u', 't', 1, 'h', 'acl_x', 'GONE',"
                " 'text/plain', 1)"
            )
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "INSERT INTO embedding_cache (model_id, content_hash, dimension, vector) VALUES ('m', 'h', 3, '{1,2}')"
            )


def test_stored_acl_classes_with_smuggled_separators_fail_closed(pg_dsn: str, tmp_path: Path) -> None:
    # A data dir from before the injective class ids: apply up to 0005, store classes as the old code could.
    for path in migrate.migration_files()[:5]:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    smuggled = ["group:finance\x1fgroup:zz", "role:admin"]
    rows = {
        "acl_smuggled00000": smuggled,
        "acl_bidi000000000": ["group:fin\u202eance", "role:admin"],
        "acl_padded0000000": ["group: finance", "role:admin"],
        "acl_clean00000000": ["group:finance", "group:zz", "role:admin"],  # positive control
        "acl_public0000000": ["public", "role:admin"],
    }
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert apply_migrations(conn, tmp_path)[-1] == "0005_resolution_near"
        for class_id, principals in rows.items():
            conn.execute("INSERT INTO acl_classes (acl_class_id, principals) VALUES (%s, %s)", (class_id, principals))
        assert apply_migrations(conn)[0] == "0006_acl_principal_names"
        stored = {r[0]: (list(r[1]), r[2]) for r in conn.execute("SELECT * FROM acl_classes").fetchall()}
    admin_only = (["role:admin"], True)
    assert stored["acl_smuggled00000"] == admin_only
    assert stored["acl_bidi000000000"] == admin_only
    assert stored["acl_padded0000000"] == admin_only
    assert stored["acl_clean00000000"] == (rows["acl_clean00000000"], False)
    assert stored["acl_public0000000"] == (rows["acl_public0000000"], False)


def test_an_older_store_keeps_each_mentions_key_identifier(pg_dsn: str, tmp_path: Path) -> None:
    """0007 gives every mention of an entity keyed by a strong identifier that identifier (and no other one)."""
    for path in migrate.migration_files()[:5]:  # the schema before 0006/0007
        (tmp_path / path.name).write_bytes(path.read_bytes())
    unkeyed = "ent_" + hashlib.sha256(b"Person\x1femail:jb@x.org").hexdigest()[:20]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        apply_migrations(conn, tmp_path)
        conn.execute("INSERT INTO acl_classes (acl_class_id, principals) VALUES ('acl_p', '{public}')")
        conn.execute(
            "INSERT INTO documents (doc_id, source, uri, title, version, content_hash, acl_class_id, media_type,"
            " byte_length) VALUES ('d1', 's', 'u', 't', 1, 'h', 'acl_p', 'text/plain', 9)"
        )
        conn.execute(
            "INSERT INTO chunks (chunk_id, doc_id, seq, section_path, start_byte, end_byte, text, token_count,"
            " content_hash, acl_class_id) VALUES ('c1', 'd1', 0, '{}', 0, 9, 'J. Blake.', 2, 'h', 'acl_p')"
        )
        conn.execute(
            "INSERT INTO kg_entities (entity_id, type, name, norm_name, strong_ids) VALUES"
            " (%s, 'Person', 'Jordan Blake', 'jordan blake', '[[\"email\", \"JB@x.org\"], [\"user_id\", \"u1\"]]'),"
            " ('ent_name', 'Team', 'Falcon', 'falcon', '[]')",
            (unkeyed,),
        )
        conn.execute(
            "INSERT INTO kg_mentions (chunk_id, entity_id, name, norm_name, tier, quote, confidence) VALUES"
            " ('c1', %s, 'J. Blake', 'j. blake', 1, 'J. Blake.', 1.0),"
            " ('c1', 'ent_name', 'Falcon', 'falcon', 1, 'x', 1)",
            (unkeyed,),
        )
        for path in migrate.migration_files()[5:7]:  # 0006, 0007 (0010 seals what this reads)
            (tmp_path / path.name).write_bytes(path.read_bytes())
        assert "0007_visibility_by_evidence" in apply_migrations(conn, tmp_path)
        rows = dict(conn.execute("SELECT entity_id, strong_ids FROM kg_mentions").fetchall())
        assert rows == {unkeyed: [["email", "JB@x.org"]], "ent_name": []}
