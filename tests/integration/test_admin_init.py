"""`admin init` on real servers (issue 16, item 6): it checks every engine before creating anything,
creates a missing database when it may, fails with CONFIGURATION_INVALID and what to do otherwise, and
can be run again."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from confluent_kafka.admin import AdminClient
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pydantic import SecretStr

from kgrag_runtime.admin import init, main
from kgrag_runtime.kafka.topics import all_topics
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def missing_db(pg_server_dsn: str) -> Iterator[str]:
    """A DSN naming a database that does not exist yet (dropped again afterwards)."""
    name = f"kgrag_init_{uuid.uuid4().hex[:12]}"
    yield make_conninfo(pg_server_dsn, dbname=name)
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _exists(server_dsn: str, dsn: str) -> bool:
    name = conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def _topics(settings: KgragSettings) -> set[str]:
    admin = AdminClient({"bootstrap.servers": settings.kafka_bootstrap or ""})
    return set(admin.list_topics(timeout=10).topics) & set(all_topics(settings.kafka_topic_prefix))


def _fresh(settings: KgragSettings, dsn: str) -> KgragSettings:
    return settings.model_copy(update={"pg_dsn": SecretStr(dsn), "kafka_topic_prefix": f"init{uuid.uuid4().hex[:8]}."})


def test_init_creates_a_missing_database_and_runs_again(
    distributed_settings: KgragSettings, pg_server_dsn: str, missing_db: str
) -> None:
    settings = _fresh(distributed_settings, missing_db)
    assert not _exists(pg_server_dsn, missing_db)
    first = init(settings)
    assert first["database_created"] is True
    assert _exists(pg_server_dsn, missing_db)
    # Created topics reach the broker's metadata a moment after CreateTopics returns: wait, bounded.
    wanted = set(all_topics(settings.kafka_topic_prefix))
    wait_for(lambda: _topics(settings) == wanted, timeout_s=30, what="the created topics in the metadata")
    again = init(settings)  # re-runnable: nothing new to create
    assert again["database_created"] is False and again["topics_created"] == []
    AdminClient({"bootstrap.servers": settings.kafka_bootstrap or ""}).delete_topics(
        list(all_topics(settings.kafka_topic_prefix)), operation_timeout=30
    )


def test_an_unreachable_engine_fails_clearly_before_anything_is_created(
    distributed_settings: KgragSettings,
    pg_server_dsn: str,
    missing_db: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = _fresh(distributed_settings, missing_db)
    for name, value in {
        "RUNTIME": "distributed",
        "PG_DSN": missing_db,
        "KAFKA_BOOTSTRAP": "127.0.0.1:9",  # nothing listens there
        "KAFKA_TOPIC_PREFIX": settings.kafka_topic_prefix,
        "OPENSEARCH_URL": settings.opensearch_url or "",
        "NEO4J_URI": settings.neo4j_uri or "",
    }.items():
        monkeypatch.setenv(f"KGRAG_{name}", value)
    with pytest.raises(SystemExit) as exit_info:
        main(["init"])
    assert exit_info.value.code == 2
    error = json.loads(capsys.readouterr().err)["error"]
    assert error["code"] == "CONFIGURATION_INVALID"
    assert "Kafka" in error["message"] and "KGRAG_KAFKA_BOOTSTRAP" in error["hint"]
    # Nothing was created: no database, no topics.
    assert not _exists(pg_server_dsn, missing_db)
    assert _topics(settings) == set()


def test_a_missing_database_this_user_may_not_create_is_a_clear_error(
    distributed_settings: KgragSettings, pg_server_dsn: str, missing_db: str
) -> None:
    role = f"kgrag_nocreate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'nocreate' NOCREATEDB").format(sql.Identifier(role)))
    try:
        dsn = make_conninfo(missing_db, user=role, password="nocreate")
        from kgrag_core.errors import KgragError

        with pytest.raises(KgragError) as err:
            init(_fresh(distributed_settings, dsn))
        assert err.value.code.value == "CONFIGURATION_INVALID"
        assert "may not create it" in err.value.message
        assert "CREATE DATABASE" in (err.value.hint or "")
        assert not _exists(pg_server_dsn, missing_db)
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
