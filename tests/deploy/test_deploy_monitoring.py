"""The chart's dashboard and alert rules: well formed, and naming only metrics the services register.

With promtool (scripts/tools/install-deploy-tools.sh builds it into .cache/tools) the rule file is linted
(`promtool check rules`) and its alerts unit-tested (`promtool test rules`, tests/deploy/prometheus/). Always,
with or without it: the rule file's structure is checked, and every metric that an alert or a dashboard panel
queries must be one the code registers (promtool cannot know that), and every quality metric must be on the
dashboard. With helm, the rendered chart must carry both files unchanged.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import REPO, DeployTools
from fastapi.testclient import TestClient
from prometheus_client import generate_latest

from kgrag_query_api.api import _base_app
from kgrag_runtime.kafka.metrics import RunnerMetrics
from kgrag_runtime.quality_metrics import ExtractionUsageMetrics, QualityMetrics

pytestmark = pytest.mark.timeout(900)  # the first test may build the tools (see conftest.py)

CHART = REPO / "helm" / "kgrag"
RULES = CHART / "rules" / "kgrag-alerts.yaml"
DASHBOARD = CHART / "dashboards" / "kgrag.json"
RULE_TESTS = REPO / "tests" / "deploy" / "prometheus" / "kgrag-alerts.test.yaml"
SEVERITIES = {"info", "warning", "critical"}
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
# Metric names in PromQL: an identifier starting kgrag_ (every kgrag metric has the prefix).
_METRIC = re.compile(r"\bkgrag_[a-z0-9_]+\b")


def _types(exposition: str) -> dict[str, str]:
    """Family name -> type, read off the text exposition (what Prometheus sees). A counter's TYPE line
    names it with `_total`; the `_created` companions are left out (no query uses them)."""
    out = {}
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", exposition, flags=re.MULTILINE):
        if name.endswith("_created"):
            continue
        out[name.removesuffix("_total") if kind == "counter" else name] = kind
    return out


def quality_families() -> dict[str, str]:
    """What the query API's quality registry defines (the dashboard must show every one)."""
    quality = QualityMetrics(backlog=lambda: {"pending_llm_chunks": 0, "review_pending": 0})
    return _types(generate_latest(quality.registry).decode())


def registered() -> tuple[dict[str, str], set[str]]:
    """(families, sample names) of every registry a kgrag process serves."""
    runner = RunnerMetrics("extractor")
    ExtractionUsageMetrics(runner.registry)  # the extractor service adds these to its runner's registry
    families = {**quality_families(), **_types(generate_latest(runner.registry).decode())}
    # The HTTP metrics: the app's own registry, reached through its /metrics route.
    with TestClient(_base_app("t", "d", lambda: {"ok": True})) as client:
        client.get("/healthz")
        families.update(_types(client.get("/metrics").text))
    samples = {f + s for f, kind in families.items() for s in _SUFFIXES.get(kind, ("",))}
    return families, samples


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    assert set(doc) == {"groups"}
    return [rule for group in doc["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] if p["type"] != "row" for t in p["targets"]]


def test_rule_file_structure() -> None:
    doc = yaml.safe_load(RULES.read_text())
    groups = doc["groups"]
    assert len({g["name"] for g in groups}) == len(groups), "duplicate group names"
    names = []
    for group in groups:
        assert group["rules"], group["name"]
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}, rule
            assert re.fullmatch(r"Kgrag[A-Za-z0-9]+", rule["alert"]), rule["alert"]
            assert isinstance(rule["expr"], str) and rule["expr"].strip(), rule["alert"]
            assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
            if "for" in rule:
                assert re.fullmatch(r"\d+[smhd]", rule["for"]), rule["alert"]
            # Balanced brackets: the one syntax error a YAML load cannot see.
            for left, right in ("()", "[]", "{}"):
                assert rule["expr"].count(left) == rule["expr"].count(right), (rule["alert"], left)
            names.append(rule["alert"])
    assert len(names) == len(set(names)), "duplicate alert names"


def test_every_metric_an_alert_or_panel_queries_is_registered() -> None:
    families, samples = registered()
    used: dict[str, set[str]] = {}
    for rule in rules():
        for name in _METRIC.findall(rule["expr"]):
            used.setdefault(name, set()).add(f"alert {rule['alert']}")
    for expr in dashboard_exprs():
        for name in _METRIC.findall(expr):
            used.setdefault(name, set()).add("dashboard")
    unknown = {name: sorted(where) for name, where in used.items() if name not in samples}
    assert not unknown, f"queried but never registered: {unknown}"
    # Positive control: the check sees the names (a regex that matched nothing would pass vacuously).
    assert {"kgrag_answer_abstentions_total", "kgrag_projection_lag_seconds", "kgrag_feedback_total"} <= set(used)
    assert "kgrag_answers" in families and families["kgrag_stage_seconds"] == "histogram"


def test_every_quality_metric_is_on_the_dashboard() -> None:
    wanted = {*quality_families(), "kgrag_projection_lag_seconds", "kgrag_consumer_lag"}
    shown = {re.sub(r"_(total|bucket|sum|count)$", "", n) for e in dashboard_exprs() for n in _METRIC.findall(e)}
    # kgrag_backlog_up is an alert's business (the store cannot be read), not a panel's.
    missing = sorted(wanted - shown - {"kgrag_backlog_up"})
    assert missing == [], f"registered but not on the dashboard: {missing}"
    assert "kgrag_backlog_up" in {n for r in rules() for n in _METRIC.findall(r["expr"])}
    assert len(wanted) > 10  # positive control: the families were found


def test_dashboard_is_a_grafana_dashboard() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] == "kgrag-quality" and dash["title"]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    for panel in dash["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            for left, right in ("()", "[]", "{}"):
                assert expr.count(left) == expr.count(right), (panel["title"], expr)


def test_promtool_lints_and_unit_tests_the_rules(deploy_tools: DeployTools, tmp_path: Path) -> None:
    if deploy_tools.promtool is None:
        print("promtool is not available: the rule structure and metric names are checked above instead")
        test_rule_file_structure()
        return
    check = _promtool(deploy_tools.promtool, "check", "rules", str(RULES))
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {len(rules())} rules found" in check.stdout + check.stderr
    unit = _promtool(deploy_tools.promtool, "test", "rules", str(RULE_TESTS))
    assert unit.returncode == 0, unit.stdout + unit.stderr
    # Negative control: promtool does refuse a broken expression here.
    broken = tmp_path / "broken-rules.yaml"
    rule = {"alert": "X", "expr": "sum(rate(kgrag_dlq_total[5m])"}  # one parenthesis short
    broken.write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [rule]}]}))
    assert _promtool(deploy_tools.promtool, "check", "rules", str(broken)).returncode != 0


def test_the_chart_ships_the_files_unchanged(deploy_tools: DeployTools) -> None:
    if deploy_tools.helm is None:
        template = (CHART / "templates" / "monitoring.yaml").read_text()
        print("helm is not available: checking the template source instead of rendering")
        assert 'Files.Get "dashboards/kgrag.json"' in template and 'Files.Get "rules/kgrag-alerts.yaml"' in template
        assert "monitoring.coreos.com/v1" in template
        return
    values = CHART / "ci" / "full-values.yaml"
    proc = subprocess.run(
        [str(deploy_tools.helm), "template", "kgrag", str(CHART), "-f", str(values), "--kube-version", "1.33.0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(proc.stdout) if d}
    board = docs[("ConfigMap", "kgrag-dashboard")]
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(board["data"]["kgrag.json"]) == json.loads(DASHBOARD.read_text())
    shipped = docs[("ConfigMap", "kgrag-alert-rules")]["data"]["kgrag-alerts.yaml"]
    assert yaml.safe_load(shipped) == yaml.safe_load(RULES.read_text())
    operator = docs[("PrometheusRule", "kgrag")]
    assert operator["spec"] == yaml.safe_load(RULES.read_text())
    assert operator["metadata"]["labels"]["release"] == "prometheus"


def _promtool(promtool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool), *args], capture_output=True, text=True, timeout=120, check=False, cwd=REPO)
