"""helm/kgrag: lint, render, schema-check and inspect every object (no cluster needed).

With .cache/tools/helm (scripts/tools/install-deploy-tools.sh) the chart is linted and rendered with the
default values and with ci/full-values.yaml (every option on), each rendered object is checked against
the Kubernetes OpenAPI schema (kubernetes-validate, strict) and then inspected here. Without helm the
same rules are checked on values.yaml and the template sources (a weaker, static fallback).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import REPO, DeployTools, k8s_validate

pytestmark = pytest.mark.timeout(900)  # the first test may build the tools (see conftest.py)

CHART = REPO / "helm" / "kgrag"
KUBE_VERSION = "1.33.0"
FULL_VALUES = CHART / "ci" / "full-values.yaml"
CUSTOM_RESOURCES = {"PrometheusRule"}
SERVICES = {
    "query-api": ("kgrag_query_api", "http", 8000),
    "connector-gateway": ("kgrag_connector_gateway", "http", 8080),
    "chunk-indexer": ("kgrag_chunk_indexer", "consumer", 9100),
    "deletion-worker": ("kgrag_deletion_worker", "consumer", 9100),
    "acl-propagator": ("kgrag_acl_propagator", "consumer", 9100),
    "graph-writer": ("kgrag_graph_writer", "consumer", 9100),
    "extractor": ("kgrag_extractor", "consumer", 9100),
    "entity-resolver": ("kgrag_entity_resolver", "consumer", 9100),
    "community-builder": ("kgrag_community_builder", "consumer", 9100),
}


# ---------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------
def helm(tools: DeployTools, *args: str) -> subprocess.CompletedProcess[str]:
    assert tools.helm is not None
    return subprocess.run([str(tools.helm), *args], capture_output=True, text=True, timeout=120, check=False, cwd=REPO)


def render(tools: DeployTools, *extra: str) -> list[dict[str, Any]]:
    proc = helm(tools, "template", "kgrag", str(CHART), "--namespace", "kgrag", "--kube-version", KUBE_VERSION, *extra)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert docs
    return docs


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def service_configmaps(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The services' configuration (the dashboard and the alert rules are ConfigMaps of their own)."""
    return [d for d in by_kind(docs, "ConfigMap").values() if component_or_none(d) != "monitoring"]


def component_or_none(doc: dict[str, Any]) -> str | None:
    return doc["metadata"].get("labels", {}).get("app.kubernetes.io/component")


def component(doc: dict[str, Any]) -> str:
    labels: dict[str, str] = doc["metadata"]["labels"]
    return labels["app.kubernetes.io/component"]


def pod_specs(docs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for d in docs:
        if d["kind"] in ("Deployment", "Job"):
            yield f"{d['kind']}/{d['metadata']['name']}", d["spec"]["template"]["spec"]
        elif d["kind"] == "Pod":
            yield f"Pod/{d['metadata']['name']}", d["spec"]


def restricted_violations(where: str, spec: dict[str, Any]) -> list[str]:
    """The "restricted" Pod Security Standard, plus the image's read-only root filesystem."""
    errors = []
    pod = spec.get("securityContext", {})
    if pod.get("runAsNonRoot") is not True:
        errors.append(f"{where}: pod runAsNonRoot")
    if pod.get("runAsUser") != 10001:
        errors.append(f"{where}: pod runAsUser 10001")
    if pod.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        errors.append(f"{where}: pod seccompProfile RuntimeDefault")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            errors.append(f"{where}: {key}")
    for volume in spec.get("volumes", []):
        if "hostPath" in volume:
            errors.append(f"{where}: hostPath volume")
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        sc = c.get("securityContext", {})
        name = f"{where}/{c['name']}"
        if sc.get("allowPrivilegeEscalation") is not False:
            errors.append(f"{name}: allowPrivilegeEscalation false")
        if sc.get("readOnlyRootFilesystem") is not True:
            errors.append(f"{name}: readOnlyRootFilesystem")
        if sc.get("capabilities", {}).get("drop") != ["ALL"] or sc.get("capabilities", {}).get("add"):
            errors.append(f"{name}: capabilities drop ALL, add none")
        if sc.get("privileged"):
            errors.append(f"{name}: privileged")
        if sc.get("runAsUser", 10001) == 0 or sc.get("runAsNonRoot") is False:
            errors.append(f"{name}: runs as root")
        mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
        if "/tmp" not in mounts:
            errors.append(f"{name}: no writable /tmp")
    return errors


def required_field_errors(docs: list[dict[str, Any]]) -> list[str]:
    """The fallback when kubernetes-validate cannot be had: the fields the API server insists on."""
    api = {
        "Deployment": "apps/v1",
        "Service": "v1",
        "ConfigMap": "v1",
        "Secret": "v1",
        "ServiceAccount": "v1",
        "Job": "batch/v1",
        "Pod": "v1",
        "HorizontalPodAutoscaler": "autoscaling/v2",
        "PodDisruptionBudget": "policy/v1",
        "NetworkPolicy": "networking.k8s.io/v1",
        "Ingress": "networking.k8s.io/v1",
    }
    errors = []
    for d in docs:
        name = f"{d.get('kind')}/{d.get('metadata', {}).get('name')}"
        if api.get(d.get("kind", "")) != d.get("apiVersion"):
            errors.append(f"{name}: unexpected kind/apiVersion {d.get('apiVersion')}")
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", str(d.get("metadata", {}).get("name", ""))):
            errors.append(f"{name}: invalid metadata.name")
        spec = d.get("spec", {})
        if d["kind"] == "Deployment":
            selector = spec.get("selector", {}).get("matchLabels", {})
            labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
            if not selector or not selector.items() <= labels.items():
                errors.append(f"{name}: selector does not match the pod template")
        for where, pod in pod_specs([d]):
            for c in pod.get("containers", []):
                if not c.get("name") or not c.get("image"):
                    errors.append(f"{where}: container without name or image")
                for port in c.get("ports", []):
                    if not 0 < int(port.get("containerPort", 0)) < 65536 or len(port.get("name", "")) > 15:
                        errors.append(f"{where}: bad port {port}")
            mounts = {m["name"] for c in pod.get("containers", []) for m in c.get("volumeMounts", [])}
            if not mounts <= {v["name"] for v in pod.get("volumes", [])}:
                errors.append(f"{where}: a volumeMount without its volume")
        if d["kind"] == "Service" and not spec.get("ports"):
            errors.append(f"{name}: no ports")
        if d["kind"] == "HorizontalPodAutoscaler" and not (spec.get("scaleTargetRef") and spec.get("maxReplicas")):
            errors.append(f"{name}: scaleTargetRef and maxReplicas are required")
        has_selector = spec.get("selector") or "podSelector" in spec
        if d["kind"] in ("PodDisruptionBudget", "NetworkPolicy") and not has_selector:
            errors.append(f"{name}: no selector")
    return errors


# ---------------------------------------------------------------------------------------------------
# rendered manifests
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rendered(deploy_tools: DeployTools) -> dict[str, list[dict[str, Any]]]:
    if deploy_tools.helm is None:
        return {}
    return {"default": render(deploy_tools), "full": render(deploy_tools, "-f", str(FULL_VALUES))}


def test_helm_lint_strict(deploy_tools: DeployTools) -> None:
    if deploy_tools.helm is None:
        static_chart_checks()
        return
    for extra in ([], ["-f", str(FULL_VALUES)]):
        proc = helm(deploy_tools, "lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION, *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "0 chart(s) failed" in proc.stdout


def test_rendered_objects_match_the_kubernetes_schema(
    deploy_tools: DeployTools,
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    if deploy_tools.helm is None:
        static_chart_checks()
        return
    for scenario, all_docs in rendered.items():
        # A custom resource has no schema in Kubernetes' own OpenAPI: the PrometheusRule's content is the
        # rule file, which test_deploy_monitoring.py lints.
        docs = [d for d in all_docs if d["kind"] not in CUSTOM_RESOURCES]
        if not deploy_tools.k8s_available:
            print("kubernetes-validate is not available: checking the required fields here instead")
            errors = required_field_errors(docs)
        else:
            errors = k8s_validate(deploy_tools, docs, KUBE_VERSION)
        assert not errors, f"{scenario}:\n" + "\n".join(errors)
        keys = [(d["kind"], d["metadata"]["name"]) for d in all_docs]
        assert len(keys) == len(set(keys)), f"{scenario}: duplicate objects"


def test_every_service_has_a_hardened_probed_deployment(
    deploy_tools: DeployTools,
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    if deploy_tools.helm is None:
        static_chart_checks()
        return
    for scenario, docs in rendered.items():
        deployments = {component(d): d for d in by_kind(docs, "Deployment").values()}
        assert set(deployments) == set(SERVICES), scenario
        for name, (module, _kind, port) in SERVICES.items():
            dep = deployments[name]
            where = f"{scenario}: {name}"
            assert "replicas" not in dep["spec"], f"{where}: replicas must be left to the HPA"
            spec = dep["spec"]["template"]["spec"]
            assert spec["automountServiceAccountToken"] is False, where
            (container,) = spec["containers"]
            assert container["command"] == ["python", "-m", module], where
            ports = {p["name"]: p["containerPort"] for p in container["ports"]}
            assert list(ports.values()) == [port], where
            port_name = next(iter(ports))
            for probe, path in (
                ("startupProbe", "/healthz"),
                ("livenessProbe", "/healthz"),
                ("readinessProbe", "/readyz"),
            ):
                get = container[probe]["httpGet"]
                assert (get["path"], get["port"]) == (path, port_name), f"{where}: {probe}"
            res = container["resources"]
            assert res["requests"]["cpu"] and res["requests"]["memory"] and res["limits"]["memory"], where
            assert restricted_violations(where, spec) == []
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            assert env.get("KGRAG_PORT" if port != 9100 else "KGRAG_OPS_PORT") == str(port), where
            refs = {next(iter(r)): r[next(iter(r))]["name"] for r in container["envFrom"]}
            assert set(refs) == {"configMapRef", "secretRef"}, where
            assert refs["configMapRef"] in by_kind(docs, "ConfigMap"), where
            if scenario == "full":
                assert refs["secretRef"] == "kgrag-engines", where
            else:
                assert refs["secretRef"] in by_kind(docs, "Secret"), where
            annotations = dep["spec"]["template"]["metadata"]["annotations"]
            assert annotations["prometheus.io/port"] == str(port), where
            assert "checksum/config" in annotations, where
        for where, spec in pod_specs(docs):
            assert restricted_violations(f"{scenario}: {where}", spec) == []


def test_every_service_has_an_hpa_and_a_pdb(
    deploy_tools: DeployTools,
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    if deploy_tools.helm is None:
        static_chart_checks()
        return
    for scenario, docs in rendered.items():
        (config,) = [d for d in service_configmaps(docs) if "helm.sh/hook" not in d["metadata"].get("annotations", {})]
        partitions = int(config["data"]["KGRAG_KAFKA_TOPIC_PARTITIONS"])
        deployments = by_kind(docs, "Deployment")
        hpas = {component(d): d for d in by_kind(docs, "HorizontalPodAutoscaler").values()}
        pdbs = {component(d): d for d in by_kind(docs, "PodDisruptionBudget").values()}
        assert set(hpas) == set(pdbs) == set(SERVICES), scenario
        for name, (_module, kind, _port) in SERVICES.items():
            where = f"{scenario}: {name}"
            hpa, pdb = hpas[name], pdbs[name]
            assert hpa["apiVersion"] == "autoscaling/v2", where
            target = hpa["spec"]["scaleTargetRef"]
            assert target["kind"] == "Deployment" and target["name"] in deployments, where
            assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"], where
            metrics = {m["type"]: m for m in hpa["spec"]["metrics"]}
            if kind == "http":
                assert metrics["Resource"]["resource"]["name"] == "cpu", where
            else:
                assert hpa["spec"]["maxReplicas"] <= partitions, f"{where}: more consumers than partitions"
                if scenario == "default":  # CPU only: works without a metrics adapter
                    assert set(metrics) == {"Resource"}, where
            pod_labels = deployments[target["name"]]["spec"]["template"]["metadata"]["labels"]
            selector = pdb["spec"]["selector"]["matchLabels"]
            assert selector.items() <= pod_labels.items(), f"{where}: PDB selects other pods"
            assert pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow", where
        if scenario == "full":
            lag = {
                name: next(m for m in hpas[name]["spec"]["metrics"] if m["type"] in ("External", "Pods"))
                for name in ("chunk-indexer", "deletion-worker", "acl-propagator")
            }
            assert lag["chunk-indexer"]["external"]["metric"]["name"] == "kgrag_consumer_lag"
            assert lag["chunk-indexer"]["external"]["metric"]["selector"]["matchLabels"] == {
                "consumer": "chunk-indexer"
            }
            assert lag["deletion-worker"]["pods"]["metric"]["name"] == "kgrag_consumer_lag"
            assert [m["type"] for m in hpas["acl-propagator"]["spec"]["metrics"]] == ["External"]


def test_services_config_secret_and_network_policies(
    deploy_tools: DeployTools,
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    if deploy_tools.helm is None:
        static_chart_checks()
        return
    for scenario, docs in rendered.items():
        services = {component(d): d for d in by_kind(docs, "Service").values()}
        http = {n for n, (_m, kind, _p) in SERVICES.items() if kind == "http"}
        assert set(services) == http, f"{scenario}: Services only for the HTTP services"
        for name in http:
            (port,) = services[name]["spec"]["ports"]
            assert port["targetPort"] == "http", f"{scenario}: {name}"
        for cm in service_configmaps(docs):
            data = cm["data"]
            assert data["KGRAG_RUNTIME"] == "distributed" and data["KGRAG_OPS_HOST"] == "0.0.0.0", scenario
            assert not {k for k in data if re.search(r"PASSWORD|SECRET|API_KEY|DSN|REDIS_URL", k)}, (
                f"{scenario}: a secret in a ConfigMap"
            )
        secrets = by_kind(docs, "Secret")
        policies = by_kind(docs, "NetworkPolicy")
        if scenario == "default":
            assert secrets and not policies
        else:
            assert not secrets, "existingSecret: the chart must not create a Secret"
            assert {component(p) for p in policies.values()} == set(SERVICES)
            for policy in policies.values():
                assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
        assert by_kind(docs, "ServiceAccount")


def test_the_query_api_and_its_web_app_are_reachable_through_the_service_and_an_optional_ingress(
    deploy_tools: DeployTools,
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    """/ui is served by the query API on its own port: its Service reaches it, and `ingress.enabled` routes a
    host's root (the app's links are absolute paths) to that Service's http port."""
    if deploy_tools.helm is None:
        values = yaml.safe_load((CHART / "values.yaml").read_text())
        assert values["ingress"]["enabled"] is False
        template = (CHART / "templates" / "ingress.yaml").read_text()
        assert "pathType: Prefix" in template and "path: /\n" in template and "name: http" in template
        return
    for scenario, docs in rendered.items():
        ingresses = by_kind(docs, "Ingress")
        if scenario == "default":
            assert not ingresses, "no Ingress unless ingress.enabled"
            continue
        (ingress,) = ingresses.values()
        services = {component(d): d for d in by_kind(docs, "Service").values()}
        query_api = services["query-api"]
        assert component(ingress) == "query-api"
        spec = ingress["spec"]
        assert spec["ingressClassName"] == "nginx" and spec["tls"][0]["hosts"] == ["kgrag.example.com"]
        (rule,) = spec["rules"]
        assert rule["host"] == "kgrag.example.com"
        (path,) = rule["http"]["paths"]
        assert (path["path"], path["pathType"]) == ("/", "Prefix")  # /ui, /v1 and the app's static files
        backend = path["backend"]["service"]
        assert backend["name"] == query_api["metadata"]["name"]
        assert backend["port"]["name"] in {p["name"] for p in query_api["spec"]["ports"]}
    refused = helm(
        deploy_tools, "template", "kgrag", str(CHART), "--set", "ingress.enabled=true",
        "--set", "services.query-api.enabled=false",
    )  # fmt: skip
    assert refused.returncode != 0 and "ingress.enabled needs services.query-api.enabled" in refused.stderr


def test_init_job_is_a_pre_install_and_pre_upgrade_hook(
    deploy_tools: DeployTools,
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    if deploy_tools.helm is None:
        static_chart_checks()
        return
    for scenario, docs in rendered.items():
        (job,) = by_kind(docs, "Job").values()
        notes = job["metadata"]["annotations"]
        assert notes["helm.sh/hook"] == "pre-install,pre-upgrade", scenario
        (container,) = job["spec"]["template"]["spec"]["containers"]
        assert container["command"] == ["python", "-m", "kgrag_runtime.admin", "init"]
        hook_weight = int(notes["helm.sh/hook-weight"])
        # what the job reads must exist before it: hook objects of a lower weight, or the existing Secret
        for ref in container["envFrom"]:
            kind, spec = next(iter(ref.items()))
            kind = "ConfigMap" if kind == "configMapRef" else "Secret"
            if scenario == "full" and kind == "Secret":
                assert spec["name"] == "kgrag-engines"
                continue
            target = by_kind(docs, kind)[spec["name"]]
            assert int(target["metadata"]["annotations"]["helm.sh/hook-weight"]) < hook_weight, scenario
        account = job["spec"]["template"]["spec"]["serviceAccountName"]
        sa = by_kind(docs, "ServiceAccount")[account]
        assert int(sa["metadata"]["annotations"]["helm.sh/hook-weight"]) < hook_weight


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["--set", "services.chunk-indexer.autoscaling.maxReplicas=13"], "above config.kafka.topicPartitions"),
        (
            [
                "--set",
                "services.acl-propagator.autoscaling.enabled=false",
                "--set",
                "services.acl-propagator.replicas=20",
            ],
            "above config.kafka.topicPartitions",
        ),
        (["--set", "services.query-api.kind=worker"], "must be http or consumer"),
        (
            [
                "--set",
                "services.deletion-worker.autoscaling.lag.enabled=true",
                "--set",
                "services.deletion-worker.autoscaling.lag.type=Object",
            ],
            "must be External or Pods",
        ),
    ],
)
def test_invalid_values_are_refused(deploy_tools: DeployTools, overrides: list[str], message: str) -> None:
    if deploy_tools.helm is None:
        static_chart_checks()
        return
    proc = helm(deploy_tools, "template", "kgrag", str(CHART), "--kube-version", KUBE_VERSION, *overrides)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr


def test_more_partitions_allow_more_consumers(deploy_tools: DeployTools) -> None:
    if deploy_tools.helm is None:
        static_chart_checks()
        return
    docs = render(
        deploy_tools,
        "--set",
        "config.kafka.topicPartitions=48",
        "--set",
        "services.chunk-indexer.autoscaling.maxReplicas=48",
    )
    hpa = by_kind(docs, "HorizontalPodAutoscaler")["kgrag-chunk-indexer"]
    assert hpa["spec"]["maxReplicas"] == 48


# ---------------------------------------------------------------------------------------------------
# fallback without helm: the same rules on the sources
# ---------------------------------------------------------------------------------------------------
def static_chart_checks() -> None:
    print("helm is not available: checking values.yaml and the template sources instead of rendering")
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "kgrag"
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    partitions = values["config"]["kafka"]["topicPartitions"]
    assert set(values["services"]) == set(SERVICES)
    for name, (module, kind, port) in SERVICES.items():
        svc = values["services"][name]
        assert (svc["module"], svc["kind"], svc["port"]) == (module, kind, port), name
        assert svc["resources"]["requests"]["cpu"] and svc["resources"]["limits"]["memory"], name
        assert svc["autoscaling"]["enabled"] and svc["pdb"]["enabled"], name
        if kind == "consumer":
            assert svc["autoscaling"]["maxReplicas"] <= partitions and svc["replicas"] <= partitions, name
            assert svc["autoscaling"]["targetCPUUtilizationPercentage"], f"{name}: CPU by default"
            assert svc["autoscaling"]["lag"]["enabled"] is False, f"{name}: lag metric off by default"
    sc, psc = values["securityContext"], values["podSecurityContext"]
    assert sc["readOnlyRootFilesystem"] and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and psc["runAsNonRoot"] and psc["runAsUser"] == 10001
    assert psc["seccompProfile"]["type"] == "RuntimeDefault"
    assert values["probes"]["liveness"]["path"] == "/healthz" and values["probes"]["readiness"]["path"] == "/readyz"
    assert values["networkPolicy"]["enabled"] is False
    templates = {p.name: p.read_text() for p in (CHART / "templates").iterdir() if p.is_file()}
    for needle in (
        "startupProbe",
        "livenessProbe",
        "readinessProbe",
        "securityContext",
        "resources",
        "kgrag.checkPartitions",
        "mountPath",
    ):
        assert needle in templates["deployment.yaml"] + templates["_helpers.tpl"], needle
    assert "autoscaling/v2" in templates["hpa.yaml"] and "External" in templates["hpa.yaml"]
    assert "policy/v1" in templates["pdb.yaml"]
    assert "pre-install,pre-upgrade" in templates["migrations-job.yaml"]
    assert "existingSecret" in templates["secret.yaml"]
    for path in Path(CHART / "templates").glob("*.yaml"):
        text = path.read_text()
        assert text.count("{{") == text.count("}}"), f"{path.name}: unbalanced template braces"
