"""The Qdrant client the lock file installs speaks the server version every deployment pins (issue 16,
item 6): qdrant-client warns, and may fail, when its major.minor is not the server's."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _locked(package: str) -> str:
    lock = tomllib.loads((REPO / "uv.lock").read_text(encoding="utf-8"))
    [version] = [p["version"] for p in lock["package"] if p["name"] == package]
    return str(version)


def _minor(version: str) -> str:
    match = re.match(r"v?(\d+)\.(\d+)", version)
    assert match, version
    return f"{match.group(1)}.{match.group(2)}"


def _server_pins() -> dict[str, str]:
    compose = (REPO / "docker-compose.yml").read_text(encoding="utf-8")
    terraform = (REPO / "terraform" / "modules" / "qdrant" / "variables.tf").read_text(encoding="utf-8")
    operations = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    pins = {
        "docker-compose.yml": re.findall(r"image:\s*qdrant/qdrant:(v[\d.]+)", compose),
        "terraform defaults": re.findall(r'default\s*=\s*"(v?\d+\.\d+\.\d+)"', terraform),
        "docs/operations.md": re.findall(r"\| Qdrant \| ([\d.]+) \|", operations),
    }
    for where, found in pins.items():
        assert found, f"no Qdrant server version found in {where}"
    return {f"{where} #{i}": v for where, found in pins.items() for i, v in enumerate(found)}


def test_every_qdrant_server_pin_matches_the_locked_client() -> None:
    client = _minor(_locked("qdrant-client"))
    pins = _server_pins()
    mismatched = {where: v for where, v in pins.items() if _minor(v) != client}
    assert not mismatched, f"qdrant-client {client} is locked, but these pin another server: {mismatched}"


def test_the_check_can_fail() -> None:
    # Positive control on the parser: a different minor version is told apart.
    assert _minor("v1.15.5") == "1.15" and _minor("1.20.0") == "1.20" and _minor("1.15.5") != _minor("1.20.0")
