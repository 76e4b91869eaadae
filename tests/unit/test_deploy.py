"""deploy/ against the code (scripts/check_deploy.py): the files pass, and each check can fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("kubernetes_validate")
pytest.importorskip("jsonschema")

from .scripts_loader import load_script  # noqa: E402  (after the skips: it loads the checker)

cd = load_script("check_deploy")


@pytest.fixture(scope="module")
def code() -> Any:
    return cd.read_code()


def _k8s(name: str) -> list[tuple[str, dict[str, Any]]]:
    path = ROOT / "deploy" / "k8s" / name
    return [(f"deploy/k8s/{name}", d) for d in yaml.safe_load_all(path.read_text()) if d]


def _with_configmap(docs: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return _k8s("01-configmap.yaml") + docs


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())


def _schema() -> dict[str, Any]:
    return json.loads((ROOT / "deploy" / "schemas" / "compose-spec.json").read_text())


def test_the_deploy_files_pass() -> None:
    report = cd.check(ROOT)
    assert report.problems == []


def test_the_code_facts_are_read_from_the_code(code: Any) -> None:
    assert code.grpc_port == 50051 and code.metrics_port == 9464 and code.signage_port == 8080
    assert {"JACKPOTD_POSTGRES_DSN", "JACKPOTD_LISTEN", "JACKPOTD_CONFIG"} <= code.env_names
    assert {"jackpotd_requests_total", "jackpotd_ledger_commit_seconds_bucket", "jackpotd_link_fenced"} <= code.metrics
    assert "jackpotd_requests" not in code.metrics  # a counter is only seen as _total
    assert {"serve", "migrate", "audit"} <= code.commands


def test_an_unknown_setting_in_a_manifest_is_reported(code: Any) -> None:
    docs = _with_configmap(_k8s("10-api.yaml"))
    container = docs[1][1]["spec"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "JACKPOTD_LISTEN_PORT", "value": "50051"})
    problems = cd.check_k8s(docs, code).problems
    assert any("JACKPOTD_LISTEN_PORT is not a jackpotd setting" in p for p in problems), problems
    assert cd.check_env_names("env: {JACKPOTD_REDIS_URI: x}", "f.yaml", code)
    assert not cd.check_env_names("JACKPOTD_REDIS_URL JACKPOTD_METRICS_PORT", "f.yaml", code)


def test_a_wrong_container_port_or_probe_is_reported(code: Any) -> None:
    docs = _with_configmap(_k8s("10-api.yaml"))
    container = docs[1][1]["spec"]["template"]["spec"]["containers"][0]
    container["ports"][0]["containerPort"] = 50052
    problems = cd.check_k8s(docs, code).problems
    assert any("port grpc is 50052 but jackpotd grpc listens on 50051" in p for p in problems), problems

    docs = _with_configmap(_k8s("10-api.yaml"))
    container = docs[1][1]["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"]["exec"]["command"][2] = "127.0.0.1:5005"
    assert any("probes port 5005" in p for p in cd.check_k8s(docs, code).problems)


def test_a_metrics_port_set_in_the_environment_must_match_the_declared_one(code: Any) -> None:
    docs = _with_configmap(_k8s("20-writer.yaml"))
    docs[0][1]["data"]["JACKPOTD_METRICS_PORT"] = "9465"
    problems = cd.check_k8s(docs, code).problems
    assert any("port metrics is 9464 but jackpotd writer listens on 9465" in p for p in problems), problems
    assert any("scrape port 9464 but the metrics port is 9465" in p for p in problems), problems


def test_a_sign_pointed_at_the_wrong_port_is_reported(code: Any) -> None:
    docs = _with_configmap(_k8s("10-api.yaml") + _k8s("60-signage.yaml"))
    assert not cd.check_k8s(docs, code).problems
    sign = next(d for _, d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "jackpot-signage")
    args = sign["spec"]["template"]["spec"]["containers"][0]["args"]
    args[args.index("--target") + 1] = "jackpotd.jackpotd.svc:9464"
    assert any("--target jackpotd.jackpotd.svc:9464" in p for p in cd.check_k8s(docs, code).problems)


def test_kubernetes_schemas_are_enforced_strictly(code: Any) -> None:
    docs = _k8s("10-api.yaml")
    docs[0][1]["spec"]["replica"] = 2  # a typo of replicas
    problems = cd.check_k8s(docs, code).problems
    assert any("Deployment jackpotd-api" in p and "replica" in p for p in problems), problems


def test_custom_resources_need_their_shape(code: Any) -> None:
    report = cd.check_k8s([("x.yaml", {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {}})],
                          code)
    assert any("without apiVersion, kind or metadata.name" in p for p in report.problems)


def test_the_compose_schema_and_ports_are_enforced(code: Any) -> None:
    doc = _compose()
    assert not cd.check_compose(doc, "compose.yaml", code, _schema()).problems
    bad = copy.deepcopy(doc)
    bad["services"]["grpc"]["restart_policy"] = "always"  # not a Compose key
    assert any("restart_policy" in p for p in cd.check_compose(bad, "compose.yaml", code, _schema()).problems)
    bad = copy.deepcopy(doc)
    bad["services"]["signage"]["ports"] = ["8080:8081"]
    problems = cd.check_compose(bad, "compose.yaml", code, _schema()).problems
    assert any("service signage: declares port 8081" in p for p in problems), problems
    bad = copy.deepcopy(doc)
    bad["services"]["grpc"]["environment"] = {**doc["services"]["grpc"]["environment"],
                                              "JACKPOTD_LISTEN": "0.0.0.0:6000"}
    problems = cd.check_compose(bad, "compose.yaml", code, _schema()).problems
    assert any("service grpc: declares port 50051" in p for p in problems), problems
    assert any("service signage: --target grpc:50051" in p for p in problems), problems


def test_prometheus_must_scrape_the_metrics_port(code: Any) -> None:
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    prometheus["scrape_configs"][0]["dns_sd_configs"][0]["port"] = 50051
    problems = cd.check_compose(_compose(), "compose.yaml", code, _schema(), prometheus).problems
    assert any("scrapes grpc:50051 but grpc's metrics port is 9464" in p for p in problems), problems


def test_unknown_metric_names_are_reported(code: Any) -> None:
    report = cd.check_metric_names([("alerts.yml: X", "rate(jackpotd_requests[5m])"),
                                    ("alerts.yml: Y", "jackpotd_ledger_lag_seconds > 1"),
                                    ("alerts.yml: Z", "sum(rate(jackpotd_hits_total[5m]))")], code)
    assert len(report.problems) == 2
    assert "jackpotd_requests is not a metric" in report.problems[0]
    assert "jackpotd_ledger_lag_seconds" in report.problems[1]


def test_a_jackpotd_command_that_does_not_exist_is_reported(code: Any) -> None:
    docs = _with_configmap(_k8s("20-writer.yaml"))
    docs[2][1]["spec"]["template"]["spec"]["containers"][0]["args"] = ["write"]
    assert any("`jackpotd write` is not a command" in p for p in cd.check_k8s(docs, code).problems)
