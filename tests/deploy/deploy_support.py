"""Helpers of the deployment tests (tests/deploy): tool discovery, HCL parsing, Kubernetes schema checks.

The two third-party validators, python-hcl2 and kubernetes-validate, are used in-process when the test
environment has them, else through the throwaway venv that scripts/tools/install-deploy-tools.sh builds
in .cache/tools/pyenv, by running this file as a script (JSON in, JSON out):

    python tests/deploy/deploy_support.py hcl FILE...          -> {"FILE": parsed, ...}
    python tests/deploy/deploy_support.py k8s VERSION < docs   -> ["error", ...]   (docs: a JSON list)
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TOOLS_DIR = Path(os.environ.get("KGRAG_TOOLS_DIR", str(REPO / ".cache" / "tools")))
INSTALL_SCRIPT = REPO / "scripts" / "tools" / "install-deploy-tools.sh"


# ---------------------------------------------------------------------------------------------------
# Tool discovery
# ---------------------------------------------------------------------------------------------------
@dataclass
class DeployTools:
    """What this machine can validate with; every missing tool has a fallback in the tests."""

    helm: Path | None = None
    tofu: Path | None = None  # tofu, else terraform: both format-check and validate the same HCL
    compose: list[str] | None = None  # docker-compose (standalone) or `docker compose` (CLI plugin)
    promtool: Path | None = None  # Prometheus's rule checker: lints and unit-tests the chart's alert rules
    venv_python: str | None = None  # .cache/tools/pyenv: imports hcl2 and kubernetes_validate
    hcl_in_process: bool = False  # this interpreter imports hcl2
    k8s_in_process: bool = False  # this interpreter imports kubernetes_validate
    install_log: str = ""

    @property
    def hcl_available(self) -> bool:
        return self.hcl_in_process or self.venv_python is not None

    @property
    def k8s_available(self) -> bool:
        return self.k8s_in_process or self.venv_python is not None

    def describe(self) -> str:
        def where(in_process: bool) -> str:
            return "in-process" if in_process else self.venv_python or "missing"

        return (
            f"helm={self.helm or 'missing (static chart checks)'}; "
            f"tofu={self.tofu or 'missing (no fmt check)'}; "
            f"compose={' '.join(self.compose) if self.compose else 'missing (YAML checks only)'}; "
            f"promtool={self.promtool or 'missing (rule structure and metric names only)'}; "
            f"python-hcl2={where(self.hcl_in_process)}; kubernetes-validate={where(self.k8s_in_process)}"
        )


def _runs(cmd: Sequence[str]) -> bool:
    try:
        return subprocess.run(list(cmd), capture_output=True, timeout=60, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def install_tools(timeout_s: float) -> str:
    """Run the install script in its own process group, killed as a whole after timeout_s."""
    env = {**os.environ, "KGRAG_TOOLS_DIR": str(TOOLS_DIR)}
    with subprocess.Popen(
        ["bash", str(INSTALL_SCRIPT)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            out += f"\n(install-deploy-tools.sh stopped after {timeout_s:.0f}s; missing tools use fallbacks)\n"
    return out


def discover_tools(install_log: str = "") -> DeployTools:
    tools = DeployTools(install_log=install_log)
    helm = TOOLS_DIR / "helm"
    if helm.is_file() and os.access(helm, os.X_OK) and _runs([str(helm), "version", "--short"]):
        tools.helm = helm
    for candidate in (TOOLS_DIR / "tofu", shutil.which("tofu"), shutil.which("terraform")):
        if candidate and Path(candidate).is_file() and _runs([str(candidate), "version"]):
            tools.tofu = Path(candidate)
            break
    standalone = TOOLS_DIR / "docker-compose"
    docker = shutil.which("docker")
    for cmd in ([str(standalone)], [shutil.which("docker-compose") or ""], [docker or "", "compose"]):
        if cmd[0] and Path(cmd[0]).is_file() and _runs([*cmd, "version"]):
            tools.compose = cmd
            break
    for candidate in (TOOLS_DIR / "promtool", shutil.which("promtool")):
        if candidate and Path(candidate).is_file() and _runs([str(candidate), "--version"]):
            tools.promtool = Path(candidate)
            break
    tools.hcl_in_process, tools.k8s_in_process = importable("hcl2"), importable("kubernetes_validate")
    venv_python = TOOLS_DIR / "pyenv" / "bin" / "python"
    if venv_python.is_file() and _runs([str(venv_python), "-c", "import hcl2, kubernetes_validate"]):
        tools.venv_python = str(venv_python)
    return tools


def _call(tools: DeployTools, args: list[str], payload: Any = None) -> Any:
    if tools.venv_python is None:
        raise RuntimeError(
            "neither the test environment nor .cache/tools/pyenv has python-hcl2 and kubernetes-validate; "
            f"run {INSTALL_SCRIPT.relative_to(REPO)} (install log follows)\n{tools.install_log}"
        )
    proc = subprocess.run(
        [tools.venv_python, __file__, *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------------------
# HCL
# ---------------------------------------------------------------------------------------------------
def _unquote(value: Any) -> Any:
    """python-hcl2 >= 7 keeps the quotes of string literals and block labels; drop them."""
    if isinstance(value, dict):
        return {_unquote(k): _unquote(v) for k, v in value.items() if not k.startswith("__")}
    if isinstance(value, list):
        return [_unquote(v) for v in value]
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def parse_hcl_files(paths: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the test run turns warnings into errors; these are not ours
        import hcl2  # optional dependency, see the module docstring

        for path in paths:
            out[path] = _unquote(hcl2.loads(Path(path).read_text()))
    return out


def parse_hcl(tools: DeployTools, paths: Sequence[Path]) -> dict[str, Any]:
    names = [str(p) for p in paths]
    if tools.hcl_in_process:
        return parse_hcl_files(names)
    result: dict[str, Any] = _call(tools, ["hcl", *names])
    return result


# ---------------------------------------------------------------------------------------------------
# Kubernetes schemas
# ---------------------------------------------------------------------------------------------------
def k8s_validate_docs(docs: Sequence[dict[str, Any]], version: str) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import kubernetes_validate  # optional dependency, see the module docstring
        from kubernetes_validate import utils

    available = sorted(set(utils.all_versions()), key=lambda v: tuple(int(x) for x in v.split(".")))
    wanted = tuple(int(x) for x in version.split("."))
    usable = [v for v in available if tuple(int(x) for x in v.split(".")) <= wanted] or available
    target = usable[-1]
    errors: list[str] = []
    for doc in docs:
        name = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kubernetes_validate.validate(doc, target, strict=True)
        except kubernetes_validate.ValidationError as err:
            path = ".".join(str(p) for p in err.path)
            errors.append(f"{name}: {path}: {err.message}")
        except kubernetes_validate.SchemaNotFoundError as err:
            errors.append(f"{name}: no schema ({err})")
    return errors


def k8s_validate(tools: DeployTools, docs: Sequence[dict[str, Any]], version: str) -> list[str]:
    if tools.k8s_in_process:
        return k8s_validate_docs(docs, version)
    result: list[str] = _call(tools, ["k8s", version], list(docs))
    return result


def _main(argv: list[str]) -> int:
    if argv[:1] == ["hcl"]:
        json.dump(parse_hcl_files(argv[1:]), sys.stdout)
        return 0
    if argv[:1] == ["k8s"] and len(argv) == 2:
        json.dump(k8s_validate_docs(json.load(sys.stdin), argv[1]), sys.stdout)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
