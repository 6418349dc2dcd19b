"""terraform/: formatting, `tofu validate` when providers can be had, and a structural check always.

`tofu validate` needs the provider plugins, which come from a provider registry. Where `tofu init
-backend=false` cannot fetch them (this project's machines reach no provider registry) the structural
check is the validation: every .tf is parsed with python-hcl2 and the wiring is checked here - variables
typed, described and used, outputs described, module arguments against the module's variables (required
ones given, unknown ones refused), every var./local./module./resource/data reference declared, providers
pinned, no backend, and the chart values the example environment sets exist in helm/kgrag/values.yaml.
Set KGRAG_TOFU_PLUGIN_DIR to a provider mirror (tofu providers mirror DIR) to get the real validate too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import REPO, DeployTools, parse_hcl

pytestmark = pytest.mark.timeout(900)  # the first test may build the tools (see conftest.py)

TF = REPO / "terraform"
MODULES = {"kubernetes-cluster", "kafka", "opensearch", "postgres", "redis", "object-storage", "qdrant"}
ENVIRONMENT = TF / "environments" / "example"
META_ARGUMENTS = {"source", "version", "providers", "depends_on", "count", "for_each"}
PROVIDER_PREFIXES = ("aws", "helm", "kubernetes", "random")
RESOURCE_REF = re.compile(r"(?<![\w.\-/\"'])((?:" + "|".join(PROVIDER_PREFIXES) + r")_[a-z0-9_]+)\.([a-z_][a-z0-9_-]*)")


@dataclass
class TfDir:
    path: Path
    text: str = ""  # all .tf files, comments removed
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    locals: dict[str, Any] = field(default_factory=dict)
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)  # "type.name" -> body
    data: set[str] = field(default_factory=set)
    terraform: list[dict[str, Any]] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)


def strip_comments(text: str) -> str:
    lines = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("#", "//")):
            continue
        lines.append(re.sub(r"\s+#\s.*$", "", line) if '"' not in line else line)
    return "\n".join(lines)


def load_dir(tools: DeployTools, path: Path) -> TfDir:
    files = sorted(path.glob("*.tf"))
    assert files, f"{path}: no .tf files"
    parsed = parse_hcl(tools, files)
    tf = TfDir(path, text="\n".join(strip_comments(f.read_text()) for f in files))
    for doc in parsed.values():
        for block in doc.get("variable", []):
            tf.variables.update(block)
        for block in doc.get("output", []):
            tf.outputs.update(block)
        for block in doc.get("locals", []):
            tf.locals.update(block)
        for block in doc.get("module", []):
            tf.modules.update(block)
        for block in doc.get("resource", []):
            for rtype, named in block.items():
                for name, body in named.items():
                    tf.resources[f"{rtype}.{name}"] = body
        for block in doc.get("data", []):
            for dtype, named in block.items():
                tf.data.update(f"{dtype}.{name}" for name in named)
        tf.terraform.extend(doc.get("terraform", []))
        for block in doc.get("provider", []):
            tf.providers.extend(block)
    return tf


@pytest.fixture(scope="module")
def dirs(deploy_tools: DeployTools) -> dict[str, TfDir]:
    found = {p.name for p in (TF / "modules").iterdir() if p.is_dir()}
    assert found == MODULES, f"modules: {sorted(found)}"
    out = {name: load_dir(deploy_tools, TF / "modules" / name) for name in sorted(MODULES)}
    out["environments/example"] = load_dir(deploy_tools, ENVIRONMENT)
    return out


# ---------------------------------------------------------------------------------------------------
# structural checks (always)
# ---------------------------------------------------------------------------------------------------
def test_variables_are_typed_described_validated_and_used(dirs: dict[str, TfDir]) -> None:
    validated = 0
    for name, tf in dirs.items():
        assert tf.variables, f"{name}: no variables"
        for var, body in tf.variables.items():
            where = f"{name}: variable {var}"
            assert body.get("type"), f"{where}: no type"
            assert len(str(body.get("description", ""))) >= 10, f"{where}: no description"
            for rule in body.get("validation", []):
                assert rule.get("condition") and rule.get("error_message"), f"{where}: incomplete validation"
                assert f"var.{var}" in str(rule["condition"]), f"{where}: validation ignores the variable"
                validated += 1
            assert re.search(rf"\bvar\.{re.escape(var)}\b", tf.text), f"{where}: declared but never used"
    assert validated >= 30, "expected validations on the variables that take free-form input"


def test_outputs_are_described(dirs: dict[str, TfDir]) -> None:
    for name, tf in dirs.items():
        assert tf.outputs, f"{name}: no outputs"
        for out, body in tf.outputs.items():
            assert "value" in body, f"{name}: output {out} has no value"
            assert len(str(body.get("description", ""))) >= 5, f"{name}: output {out} has no description"


def test_every_reference_is_declared(dirs: dict[str, TfDir]) -> None:
    for name, tf in dirs.items():
        for var in set(re.findall(r"\bvar\.([A-Za-z_][\w-]*)", tf.text)):
            assert var in tf.variables, f"{name}: var.{var} is not declared"
        for local in set(re.findall(r"\blocal\.([A-Za-z_][\w-]*)", tf.text)):
            assert local in tf.locals, f"{name}: local.{local} is not defined"
        for rtype, rname in set(RESOURCE_REF.findall(tf.text)):
            assert f"{rtype}.{rname}" in tf.resources, f"{name}: {rtype}.{rname} is not a resource here"
        for dtype, dname in set(re.findall(r"\bdata\.([a-z0-9_]+)\.([A-Za-z_][\w-]*)", tf.text)):
            assert f"{dtype}.{dname}" in tf.data, f"{name}: data.{dtype}.{dname} is not declared"
        for mod in set(re.findall(r"\bmodule\.([A-Za-z_][\w-]*)", tf.text)):
            assert mod in tf.modules, f"{name}: module.{mod} is not declared"


def test_module_calls_match_the_modules(dirs: dict[str, TfDir]) -> None:
    env = dirs["environments/example"]
    called = set()
    for call, body in env.modules.items():
        source = str(body["source"])
        assert source.startswith("../../modules/"), f"module {call}: local modules only ({source})"
        target = (ENVIRONMENT / source).resolve()
        assert target.is_dir(), f"module {call}: {source} does not exist"
        module = dirs[target.name]
        called.add(target.name)
        given = set(body) - META_ARGUMENTS
        unknown = given - set(module.variables)
        assert not unknown, f"module {call}: {sorted(unknown)} are not variables of {target.name}"
        required = {v for v, spec in module.variables.items() if "default" not in spec}
        assert required <= given, f"module {call}: missing required {sorted(required - given)}"
        for out in set(re.findall(rf"\bmodule\.{re.escape(call)}\.([A-Za-z_][\w-]*)", env.text)):
            assert out in module.outputs, f"module.{call}.{out}: {target.name} has no such output"
    assert called == MODULES, f"the example environment does not use {sorted(MODULES - called)}"


def test_providers_are_pinned_and_there_is_no_backend(dirs: dict[str, TfDir]) -> None:
    for name, tf in dirs.items():
        assert tf.terraform, f"{name}: no terraform block"
        required: dict[str, Any] = {}
        for block in tf.terraform:
            assert "backend" not in block and "cloud" not in block, f"{name}: no backend (validate runs without)"
            for providers in block.get("required_providers", []):
                required.update(providers)
        assert any(b.get("required_version") for b in tf.terraform), f"{name}: no required_version"
        for provider, spec in required.items():
            assert spec.get("source") == f"hashicorp/{provider}", f"{name}: {provider} source"
            constraint = str(spec.get("version", ""))
            assert re.search(r"(~>|<)\s*\d", constraint), f"{name}: {provider} is not pinned ({constraint!r})"
        used = {r.split("_")[0] for r in tf.resources} | {d.split("_")[0] for d in tf.data} | set(tf.providers)
        assert used <= set(required), f"{name}: providers used but not required: {sorted(used - set(required))}"
    env_required: dict[str, Any] = {}
    for block in dirs["environments/example"].terraform:
        for providers in block.get("required_providers", []):
            env_required.update(providers)
    assert {"aws", "helm", "kubernetes"} <= set(env_required)
    assert all(str(s["version"]).startswith("~>") for s in env_required.values())


def test_environment_wires_every_endpoint_into_outputs_and_the_chart(dirs: dict[str, TfDir]) -> None:
    env = dirs["environments/example"]
    for out in (
        "kafka_bootstrap",
        "opensearch_url",
        "postgres_address",
        "postgres_dsn",
        "redis_endpoint",
        "s3_bucket",
        "qdrant_url",
        "neo4j_uri",
        "cluster_endpoint",
        "query_api_url",
    ):
        assert out in env.outputs, f"missing output {out}"
    for out, body in env.outputs.items():
        if re.search(r"dsn|password|secret|token", out):
            assert body.get("sensitive") is True, f"output {out} must be sensitive"
    releases = {k: v for k, v in env.resources.items() if k.startswith("helm_release.")}
    (kgrag,) = [v for v in releases.values() if "helm/kgrag" in str(v.get("chart", ""))]
    chart_dir = Path(str(kgrag["chart"]).replace("${path.module}", str(ENVIRONMENT))).resolve()
    assert (chart_dir / "Chart.yaml").is_file(), f"chart path {kgrag['chart']} does not resolve"
    chart_values = yaml.safe_load((chart_dir / "values.yaml").read_text())

    def walk(given: dict[str, Any], known: dict[str, Any], path: str) -> None:
        for key, value in given.items():
            assert key in known, f"kgrag_values.{path}{key} is not a value of the chart"
            if isinstance(value, dict) and isinstance(known[key], dict) and known[key]:
                walk(value, known[key], f"{path}{key}.")

    walk(env.locals["kgrag_values"], chart_values, "")
    secret = env.resources["kubernetes_secret_v1.kgrag"]
    text = str(secret)
    for key in (
        "KGRAG_PG_DSN",
        "KGRAG_OPENSEARCH_PASSWORD",
        "KGRAG_QDRANT_API_KEY",
        "KGRAG_NEO4J_PASSWORD",
        "KGRAG_REDIS_URL",
        "KGRAG_AUTH_SECRET",
    ):
        assert key in text, f"the engines Secret lacks {key}"
    assert chart_values["secrets"]["values"].keys() >= {"KGRAG_PG_DSN", "KGRAG_REDIS_URL"}


def test_data_stores_are_private_encrypted_and_backed_up(dirs: dict[str, TfDir]) -> None:
    pg = dirs["postgres"].resources["aws_db_instance.this"]
    assert pg["storage_encrypted"] is True and pg["publicly_accessible"] is False
    assert pg["skip_final_snapshot"] is False
    assert "backup_retention_days" in str(pg["backup_retention_period"])
    pg_var = dirs["postgres"].variables["backup_retention_days"]
    assert pg_var["default"] >= 7, "PostgreSQL is the source of truth: keep a week of PITR at least"
    s3 = dirs["object-storage"].resources
    assert s3["aws_s3_bucket_versioning.this"]["versioning_configuration"][0]["status"] == "Enabled"
    assert "aws_s3_bucket_server_side_encryption_configuration.this" in s3
    assert "aws_s3_bucket_lifecycle_configuration.this" in s3
    assert s3["aws_s3_bucket_public_access_block.this"]["block_public_acls"] is True
    redis = dirs["redis"].resources["aws_elasticache_replication_group.this"]
    assert redis["transit_encryption_enabled"] is True and redis["at_rest_encryption_enabled"] is True
    msk = str(dirs["kafka"].resources["aws_msk_cluster.this"])
    assert "auto.create.topics.enable=false" in str(dirs["kafka"].resources["aws_msk_configuration.this"])
    assert "encryption_at_rest_kms_key_arn" in msk
    search = dirs["opensearch"].resources["aws_opensearch_domain.this"]
    assert search["engine_version"] == "${var.engine_version}"
    assert dirs["opensearch"].variables["engine_version"]["default"] == "OpenSearch_2.19"
    assert dirs["kafka"].variables["kafka_version"]["default"].startswith("4.1")
    assert dirs["postgres"].variables["engine_version"]["default"] == "17"
    assert dirs["qdrant"].variables["image_tag"]["default"].startswith("v1.15")


# ---------------------------------------------------------------------------------------------------
# the tools: fmt always when a binary exists, validate when providers can be had
# ---------------------------------------------------------------------------------------------------
def tf_env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        "CHECKPOINT_DISABLE": "1",
        "TF_DATA_DIR": str(tmp / ".tfdata"),
        "TF_CLI_CONFIG_FILE": str(tmp / "cli.tfrc"),
    }


def test_fmt_check(deploy_tools: DeployTools, tmp_path: Path) -> None:
    if deploy_tools.tofu is None:
        print("neither tofu nor terraform is available: formatting not checked (structure is)")
        return
    (tmp_path / "cli.tfrc").write_text("")
    proc = subprocess.run(
        [str(deploy_tools.tofu), "fmt", "-check", "-recursive", "-diff", "-no-color", str(TF)],
        capture_output=True,
        text=True,
        timeout=120,
        env=tf_env(tmp_path),
        check=False,
    )
    assert proc.returncode == 0, f"run `tofu fmt -recursive terraform`:\n{proc.stdout}{proc.stderr}"


def test_validate_when_providers_are_available(deploy_tools: DeployTools, tmp_path: Path) -> None:
    if deploy_tools.tofu is None:
        print("no tofu/terraform binary: the structural checks above are the validation")
        return
    work = tmp_path / "repo"
    shutil.copytree(TF, work / "terraform")
    shutil.copytree(REPO / "helm", work / "helm")
    (tmp_path / "cli.tfrc").write_text("")
    plugin_dir = os.environ.get("KGRAG_TOFU_PLUGIN_DIR")
    targets = [work / "terraform" / "modules" / m for m in sorted(MODULES)] + [
        work / "terraform" / "environments" / "example"
    ]
    for target in targets:
        init = [str(deploy_tools.tofu), "init", "-backend=false", "-input=false", "-no-color"]
        if plugin_dir:
            init.append(f"-plugin-dir={plugin_dir}")
        env = tf_env(tmp_path / target.name)
        (tmp_path / target.name).mkdir(exist_ok=True)
        (tmp_path / target.name / "cli.tfrc").write_text("")
        proc = subprocess.run(init, cwd=target, capture_output=True, text=True, timeout=300, env=env, check=False)
        if proc.returncode != 0:
            if plugin_dir:
                pytest.fail(f"{target.name}: init with KGRAG_TOFU_PLUGIN_DIR failed:\n{proc.stderr}")
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
            why = next((ln for ln in lines if re.search(r"registry|connect|no such host|Failed", ln)), lines[:1])
            print(
                f"{deploy_tools.tofu.name} init cannot fetch providers here ({why}); `validate` needs them:"
                " the structural checks are the validation"
            )
            return
        proc = subprocess.run(
            [str(deploy_tools.tofu), "validate", "-no-color"],
            cwd=target,
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, f"{target.name}: {proc.stdout}{proc.stderr}"
