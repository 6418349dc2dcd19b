"""Fixtures of the deployment tests: the tools, built once per session (fast when cached)."""

from __future__ import annotations

import os

import pytest
from deploy_support import DeployTools, discover_tools, install_tools


@pytest.fixture(scope="session")
def deploy_tools() -> DeployTools:
    """helm, tofu and the validators' venv from .cache/tools, installing what is missing first.

    KGRAG_DEPLOY_TOOLS_INSTALL=0 uses only what is already there; KGRAG_DEPLOY_TOOLS_TIMEOUT bounds the
    install (seconds, default 360). Whatever is still missing afterwards, the tests use their fallback
    validators for it, and say so in their output.
    """
    log = ""
    if os.environ.get("KGRAG_DEPLOY_TOOLS_INSTALL", "1") != "0":
        log = install_tools(float(os.environ.get("KGRAG_DEPLOY_TOOLS_TIMEOUT", "360")))
    tools = discover_tools(log)
    print(f"\n[deploy tools] {tools.describe()}")
    return tools
