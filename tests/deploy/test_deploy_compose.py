"""docker-compose.yml and the Dockerfile: structure, versions, bindings, dependencies (no Docker needed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from deploy_support import REPO, DeployTools

COMPOSE = REPO / "docker-compose.yml"

# The engines and the major.minor every environment runs (see docs/operations.md).
ENGINE_VERSIONS = {
    "kafka": ("apache/kafka", "4.1"),
    "opensearch": ("opensearchproject/opensearch", "2.19"),
    "qdrant": ("qdrant/qdrant", "1.15"),
    "neo4j": ("neo4j", "5.26"),
    "postgres": ("postgres", "17"),
    "redis": ("redis", "7.4"),
    "seaweedfs": ("chrislusf/seaweedfs", None),
}
# The contract: service -> (python -m module, port)
KGRAG_SERVICES = {
    "query-api": ("kgrag_query_api", 8000),
    "connector-gateway": ("kgrag_connector_gateway", 8080),
    "chunk-indexer": ("kgrag_chunk_indexer", 9100),
    "deletion-worker": ("kgrag_deletion_worker", 9100),
    "acl-propagator": ("kgrag_acl_propagator", 9100),
    "graph-writer": ("kgrag_graph_writer", 9100),
    "extractor": ("kgrag_extractor", 9100),
    "entity-resolver": ("kgrag_entity_resolver", 9100),
    "community-builder": ("kgrag_community_builder", 9100),
}
ONE_SHOT = {"kgrag-init", "s3-init"}
VAR = re.compile(r"\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|[A-Za-z_][A-Za-z0-9_]*)")


def interpolate(text: str) -> str:
    """Compose's interpolation with an empty environment: every ${VAR} must carry its default."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1) == "$":
            return "$$"  # an escaped dollar stays for the container's shell
        if m.group(2) is None or m.group(3) is None or m.group(3).endswith("?"):
            raise AssertionError(f"{m.group(0)} has no default: the file must work without a .env")
        return m.group(4)

    return VAR.sub(sub, text)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(interpolate(COMPOSE.read_text()))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    svcs = compose["services"]
    assert isinstance(svcs, dict)
    return svcs


def env_of(svc: dict[str, Any]) -> dict[str, str]:
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def hosts_in(value: str) -> set[str]:
    """Host names in a URL, a DSN, or a host:port[,host:port] list."""
    hosts: set[str] = set()
    for part in value.split(","):
        part = part.strip()
        if "://" in part:
            host = urlsplit(part).hostname
        elif re.fullmatch(r"[A-Za-z0-9.-]+:\d+", part):
            host = part.split(":")[0]
        else:
            host = None
        if host:
            hosts.add(host)
    return hosts


def test_services_are_the_expected_set(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) == set(ENGINE_VERSIONS) | set(KGRAG_SERVICES) | ONE_SHOT


def test_every_service_has_an_image_and_long_running_ones_a_healthcheck(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, svc in services.items():
        assert svc.get("image"), f"{name}: no image"
        if name in ONE_SHOT:
            assert svc.get("restart") == "no", f"{name}: a one-shot job must not restart"
            continue
        check = svc.get("healthcheck") or {}
        assert check.get("test") and not check.get("disable"), f"{name}: no healthcheck"
        for key in ("interval", "timeout", "retries"):
            assert key in check, f"{name}: healthcheck without {key}"


def test_engine_images_match_the_supported_versions(services: dict[str, dict[str, Any]]) -> None:
    for name, (repo, major_minor) in ENGINE_VERSIONS.items():
        image = services[name]["image"]
        repository, _, tag = image.rpartition(":")
        assert repository == repo, f"{name}: {image} is not the official {repo} image"
        assert tag and tag != "latest", f"{name}: {image} must be pinned"
        if major_minor is not None:
            version = tag.removeprefix("v").split("-")[0]
            assert version == major_minor or version.startswith(major_minor + "."), (
                f"{name}: {image} is not {major_minor}.x"
            )
    assert "community" in services["neo4j"]["image"], "Neo4j must be the Community edition"


def test_every_published_port_is_bound_to_loopback(services: dict[str, dict[str, Any]]) -> None:
    published = 0
    for name, svc in services.items():
        for port in svc.get("ports", []):
            published += 1
            if isinstance(port, dict):
                assert port.get("host_ip") == "127.0.0.1", f"{name}: {port}"
            else:
                assert str(port).startswith("127.0.0.1:"), f"{name}: {port} is not bound to 127.0.0.1"
    assert published >= len(KGRAG_SERVICES)


def test_kgrag_services_run_the_contract_commands_distributed(services: dict[str, dict[str, Any]]) -> None:
    for name, (module, port) in KGRAG_SERVICES.items():
        svc = services[name]
        assert svc["command"] == ["python", "-m", module], name
        env = env_of(svc)
        assert env.get("KGRAG_RUNTIME") == "distributed", name
        # the code binds loopback by default: a container must bind all interfaces
        assert env.get("KGRAG_HOST") == "0.0.0.0" and env.get("KGRAG_OPS_HOST") == "0.0.0.0", name
        if port == 9100:
            assert env.get("KGRAG_OPS_PORT") == "9100", name
        else:
            assert env.get("KGRAG_PORT") == str(port), name
        assert any(p.endswith(f":{port}") for p in svc["ports"]), f"{name}: port {port} not published"
        test = " ".join(svc["healthcheck"]["test"])
        assert f"127.0.0.1:{port}/readyz" in test, f"{name}: healthcheck does not call /readyz on {port}"
    init = services["kgrag-init"]
    assert init["command"] == ["python", "-m", "kgrag_runtime.admin", "init"]
    assert env_of(init).get("KGRAG_RUNTIME") == "distributed"


def test_kgrag_services_depend_on_every_engine_they_are_configured_with(
    services: dict[str, dict[str, Any]],
) -> None:
    for name in [*KGRAG_SERVICES, "kgrag-init"]:
        svc = services[name]
        depends = svc.get("depends_on") or {}
        assert isinstance(depends, dict), f"{name}: depends_on needs conditions"
        referenced = set()
        for value in env_of(svc).values():
            referenced |= hosts_in(value) & set(services)
        assert referenced >= {"postgres", "kafka", "opensearch", "qdrant", "neo4j", "redis", "seaweedfs"}, name
        for dep in referenced:
            assert depends.get(dep, {}).get("condition") == "service_healthy", f"{name}: {dep} not awaited healthy"
        for dep, spec in depends.items():
            assert dep in services, f"{name}: depends on unknown {dep}"
            wanted = "service_completed_successfully" if dep in ONE_SHOT else "service_healthy"
            assert spec.get("condition") == wanted, f"{name}: {dep} should be {wanted}"
        if name != "kgrag-init":
            assert "kgrag-init" in depends, f"{name}: must wait for migrations and topics"


def test_kgrag_containers_are_locked_down(services: dict[str, dict[str, Any]]) -> None:
    for name in [*KGRAG_SERVICES, "kgrag-init"]:
        svc = services[name]
        assert svc.get("read_only") is True, name
        assert str(svc.get("user", "")).startswith("10001"), name
        assert svc.get("cap_drop") == ["ALL"], name
        assert "no-new-privileges:true" in svc.get("security_opt", []), name
        mounts = [str(t).split(":")[0] for t in svc.get("tmpfs", [])]
        assert "/tmp" in mounts and "/data" in mounts, f"{name}: /tmp and /data must be writable"


def test_named_volumes_are_declared(compose: dict[str, Any], services: dict[str, dict[str, Any]]) -> None:
    declared = set(compose.get("volumes") or {})
    for name, svc in services.items():
        for volume in svc.get("volumes", []):
            source = str(volume).split(":")[0]
            if not source.startswith((".", "/")):
                assert source in declared, f"{name}: volume {source} not declared"
    for name, svc in services.items():
        for cfg in svc.get("configs", []):
            assert cfg["source"] in (compose.get("configs") or {}), f"{name}: config {cfg['source']} missing"


def test_contract_modules_exist_in_the_workspace() -> None:
    for module, _ in KGRAG_SERVICES.values():
        assert list(REPO.glob(f"services/*/src/{module}/__main__.py")), f"{module} has no __main__"
    assert (REPO / "libs/kgrag-runtime/src/kgrag_runtime/admin.py").is_file()


@pytest.mark.timeout(900)  # may build the tools first (see conftest.py)
def test_docker_compose_config(deploy_tools: DeployTools, tmp_path: Path) -> None:
    """Compose's own parser and schema (no engine needed), with an empty environment: the defaults."""
    if deploy_tools.compose is None:
        print("no docker compose binary: the YAML checks above are the validation")
        return
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    cmd = [*deploy_tools.compose, "--project-directory", str(REPO), "-f", str(COMPOSE)]
    proc = subprocess.run([*cmd, "config", "--quiet"], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([*cmd, "config", "--format", "json"], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    model = json.loads(proc.stdout)
    assert set(model["services"]) == set(ENGINE_VERSIONS) | set(KGRAG_SERVICES) | ONE_SHOT
    for name, svc in model["services"].items():
        for port in svc.get("ports", []):
            assert port.get("host_ip") == "127.0.0.1", f"{name}: compose reads {port}"
        if name not in ONE_SHOT:
            assert svc["healthcheck"]["test"], name
    for name in KGRAG_SERVICES:
        env_vars = model["services"][name]["environment"]
        assert env_vars["KGRAG_RUNTIME"] == "distributed", name
        assert model["services"][name]["depends_on"]["kgrag-init"]["condition"] == "service_completed_successfully"


# ---------------------------------------------------------------------------------------------------
# Dockerfile
# ---------------------------------------------------------------------------------------------------
def test_dockerfile_builds_the_locked_workspace_as_non_root() -> None:
    text = (REPO / "Dockerfile").read_text()
    froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
    assert froms and all(f in ("${PYTHON_IMAGE}",) for f in froms)
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim", text, re.M)
    assert "uv sync --frozen --all-packages --no-dev" in text
    assert re.search(r"^USER 10001:10001$", text, re.M)
    for env in ("KGRAG_RUNTIME=distributed", "KGRAG_HOST=0.0.0.0", "KGRAG_OPS_HOST=0.0.0.0", "HOME=/tmp"):
        assert env in text, env
    ignore = (REPO / ".dockerignore").read_text().split()
    assert ignore[0] == "*" or "*" in ignore, ".dockerignore should be an allow-list"
    assert {"!pyproject.toml", "!uv.lock", "!libs/", "!services/", "!schemas/", "**/.venv"} <= set(ignore)


def test_dockerfile_copies_what_the_symlinked_schemas_need() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert "COPY schemas/ schemas/" in text
    for link in REPO.glob("libs/*/src/**/*"):
        if link.is_symlink():
            target = (link.parent / link.readlink()).resolve()
            assert target.is_relative_to(REPO / "schemas"), f"{link} points outside schemas/: {target}"


def test_compose_file_has_no_tabs_and_ends_with_newline() -> None:
    raw = Path(COMPOSE).read_text()
    assert "\t" not in raw and raw.endswith("\n")
