"""Check deploy/ offline: schemas, setting names, ports and metric names against the code (`make deploy-check`).

(a) every Kubernetes manifest in deploy/k8s validates with kubernetes-validate (schemas bundled in its wheel,
    strict: unknown fields are errors); custom resources (CloudNativePG, PrometheusRule) have no schema there
    and are checked for their shape only (apiVersion, kind, metadata.name);
(b) deploy/compose.yaml validates against the Compose Specification schema vendored in deploy/schemas;
(c) every JACKPOTD_* name in deploy/ is a setting of jackpotd/settings.py (or JACKPOTD_CONFIG), and every gRPC,
    metrics and sign port a file declares, probes, scrapes or connects to is what the code listens on: its
    defaults (Settings, jackpot-signage's --port) or the --listen/--metrics-port/--port flags and
    JACKPOTD_LISTEN/JACKPOTD_METRICS_PORT the same file passes; every `jackpotd COMMAND` exists;
(d) the Grafana dashboard is JSON, and every jackpotd_* metric in it and in the alert rules is one
    jackpotd/metrics.py defines (counters as _total, histograms as _bucket/_sum/_count).

Exit status 0 when all hold, 1 otherwise; each problem names its file and what to change. No network, no Docker.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S_VERSION = "1.30"  # the oldest Kubernetes the manifests are meant for

# Announced by the roles being added (jackpotd grpc / jackpotd writer and the writer's lease gauge): until the
# code has them they are warnings, not errors; once it does they are checked like any other name.
PENDING_COMMANDS = frozenset({"grpc", "writer"})
PENDING_METRICS: frozenset[str] = frozenset()

ENV_NAME = re.compile(r"\bJACKPOTD_[A-Z0-9_]+\b")
METRIC_NAME = re.compile(r"\bjackpotd_[a-z0-9_]+\b")
JACKPOTD_ROLES_SERVING_GRPC = ("serve", "grpc")
JACKPOTD_ROLES_WITH_METRICS = ("serve", "grpc", "writer")


# ---------------------------------------------------------------------------------------------- the code's facts

@dataclass(frozen=True)
class Code:
    """What the code accepts and listens on, read from it (never restated here)."""

    env_names: frozenset[str]
    grpc_port: int
    metrics_port: int
    signage_port: int
    commands: frozenset[str]
    metrics: frozenset[str]


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def _subcommands(p: argparse.ArgumentParser) -> set[str]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _option_default(p: argparse.ArgumentParser, flag: str) -> Any:
    for action in p._actions:
        if flag in action.option_strings:
            return action.default
    raise LookupError(flag)


def metric_names() -> frozenset[str]:
    """The sample names jackpotd/metrics.py's metrics expose, as PromQL sees them."""
    from prometheus_client.metrics import MetricWrapperBase

    import jackpotd.metrics as m

    suffixes = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count"),
                "summary": ("", "_sum", "_count"), "info": ("_info",), "enum": ("",)}
    names: set[str] = set()
    for value in vars(m).values():
        if isinstance(value, MetricWrapperBase):
            names.update(value._name + s for s in suffixes[value._type])
    return frozenset(names)


def read_code() -> Code:
    from jackpot_signage.cli import parser as signage_parser

    from jackpotd.cli import parser as jackpotd_parser
    from jackpotd.settings import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    env = {prefix + name.upper() for name in Settings.model_fields} | {prefix + "CONFIG"}  # CONFIG: settings.load
    fields = Settings.model_fields
    return Code(env_names=frozenset(env), grpc_port=_port(str(fields["listen"].default)),
                metrics_port=int(fields["metrics_port"].default),
                signage_port=int(_option_default(signage_parser(), "--port")),
                commands=frozenset(_subcommands(jackpotd_parser())), metrics=metric_names())


# ------------------------------------------------------------------------------------------------------ results

@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def extend(self, other: Report) -> None:
        self.problems += other.problems
        self.warnings += other.warnings
        self.notes += other.notes


# ---------------------------------------------------------------------------------------- (c) names of settings

def check_env_names(text: str, where: str, code: Code) -> list[str]:
    """Every JACKPOTD_* name in `text` is a setting."""
    problems = []
    for name in sorted(set(ENV_NAME.findall(text)) - code.env_names):
        problems.append(f"{where}: {name} is not a jackpotd setting (jackpotd/settings.py); valid: "
                        f"{', '.join(sorted(code.env_names))}")
    return problems


# ----------------------------------------------------------------------------------------------- (c) the ports

@dataclass
class Workload:
    """One container (compose service or Kubernetes container) running a program of this repository."""

    where: str
    program: str  # jackpotd or jackpot-signage
    args: list[str]
    env: dict[str, str]
    ports: list[tuple[str | None, int]] = field(default_factory=list)  # declared: (name, container port)
    probe_ports: list[int] = field(default_factory=list)
    metrics_scrape_ports: list[int] = field(default_factory=list)  # prometheus.io/port annotations

    def flag(self, name: str) -> str | None:
        for i, a in enumerate(self.args):
            if a == name and i + 1 < len(self.args):
                return self.args[i + 1]
            if a.startswith(name + "="):
                return a.split("=", 1)[1]
        return None

    @property
    def command(self) -> str | None:
        return self.args[0] if self.program == "jackpotd" and self.args else None

    def expected(self, code: Code) -> dict[str, int]:
        """name -> port this program listens on, with the flags and environment it is given."""
        if self.program == "jackpot-signage":
            return {"http": int(self.flag("--port") or code.signage_port)}
        out: dict[str, int] = {}
        if self.command in JACKPOTD_ROLES_SERVING_GRPC:
            listen = self.flag("--listen") or self.env.get("JACKPOTD_LISTEN")
            out["grpc"] = _port(listen) if listen else code.grpc_port
        if self.command in JACKPOTD_ROLES_WITH_METRICS:
            metrics = self.flag("--metrics-port") or self.env.get("JACKPOTD_METRICS_PORT")
            out["metrics"] = int(metrics) if metrics else code.metrics_port
        return out


def _target_port(args: list[str]) -> int | None:
    for i, a in enumerate(args):
        if a == "--target" and i + 1 < len(args):
            return _port(args[i + 1])
    return None


def check_workloads(workloads: Iterable[Workload], code: Code, grpc_endpoints: Mapping[str, set[int]]) -> Report:
    """Declared, probed and scraped ports agree with what each program listens on; a sign's --target is a
    gRPC port of the service it names (`grpc_endpoints`: host name -> ports that reach a jackpotd's gRPC)."""
    r = Report()
    for w in workloads:
        if w.program == "jackpotd":
            if not w.command:
                r.problems.append(f"{w.where}: runs jackpotd without a command")
                continue
            if w.command not in code.commands:
                (r.warnings if w.command in PENDING_COMMANDS else r.problems).append(
                    f"{w.where}: `jackpotd {w.command}` is not a command of jackpotd/cli.py"
                    + (" yet (announced; fine once it lands)" if w.command in PENDING_COMMANDS else
                       f"; commands: {', '.join(sorted(code.commands))}"))
        expected = w.expected(code)
        for name, port in w.ports:
            if name in expected:
                if port != expected[name]:
                    r.problems.append(f"{w.where}: port {name} is {port} but {w.program} {w.command or ''} listens "
                                      f"on {expected[name]} for {name} (flags/environment/defaults)")
            elif port not in expected.values():
                r.problems.append(f"{w.where}: declares port {port}{f' ({name})' if name else ''}, but "
                                  f"{w.program} {w.command or ''} listens on "
                                  f"{', '.join(f'{k} {v}' for k, v in expected.items()) or 'no port'}")
        serving = expected.get("grpc") or expected.get("http")
        for port in w.probe_ports:
            if port != serving:
                r.problems.append(f"{w.where}: probes port {port} but {w.program} serves on {serving}")
        for port in w.metrics_scrape_ports:
            if port != expected.get("metrics"):
                r.problems.append(f"{w.where}: Prometheus is told to scrape port {port} but the metrics port is "
                                  f"{expected.get('metrics', 'off')}")
        if w.program == "jackpot-signage":
            target = w.flag("--target") or "127.0.0.1:50051"
            host, port = target.rsplit(":", 1)[0], int(target.rsplit(":", 1)[1])
            known = grpc_endpoints.get(host.split(".")[0])
            if known is None:
                r.problems.append(f"{w.where}: --target {target}: no jackpotd gRPC service named {host!r} in this "
                                  "deployment")
            elif port not in known:
                r.problems.append(f"{w.where}: --target {target}: {host} serves gRPC on {sorted(known)}")
    return r


# ---------------------------------------------------------------------------------------------------- compose

def _compose_env(env: Any) -> dict[str, str]:
    if isinstance(env, list):
        return dict(str(e).split("=", 1) if "=" in str(e) else (str(e), "") for e in env)
    return {str(k): str(v) for k, v in (env or {}).items()}


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else str(value).split()


def compose_workloads(doc: Mapping[str, Any], where: str, code: Code
                      ) -> tuple[list[Workload], dict[str, set[int]]]:
    workloads, endpoints = [], {}
    for name, svc in (doc.get("services") or {}).items():
        image = str(svc.get("image", ""))
        if not image.startswith("jackpotd"):
            continue
        entry = _as_list(svc.get("entrypoint"))
        program = entry[0] if entry else "jackpotd"
        w = Workload(f"{where}: service {name}", program, entry[1:] + _as_list(svc.get("command")),
                     _compose_env(svc.get("environment")))
        for p in svc.get("expose") or []:
            w.ports.append((None, int(str(p).split("/")[0])))
        for p in svc.get("ports") or []:
            container = p.get("target") if isinstance(p, dict) else str(p).split("/")[0].rsplit(":", 1)[-1]
            w.ports.append((None, int(container)))
        test = _as_list((svc.get("healthcheck") or {}).get("test"))
        if (port := _target_port(test)) is not None:
            w.probe_ports.append(port)
        if w.command in JACKPOTD_ROLES_SERVING_GRPC:
            endpoints[name] = {w.expected(code)["grpc"]}
        workloads.append(w)
    return workloads, endpoints


def compose_scrapes(prometheus: Mapping[str, Any], where: str) -> list[tuple[str, str, int]]:
    """(where, host, port) of each scrape target of a Prometheus configuration."""
    out = []
    for job in prometheus.get("scrape_configs") or []:
        for sd in job.get("dns_sd_configs") or []:
            out += [(f"{where}: job {job.get('job_name')}", n, int(sd["port"])) for n in sd.get("names", [])]
        for sc in job.get("static_configs") or []:
            for t in sc.get("targets", []):
                out.append((f"{where}: job {job.get('job_name')}", t.rsplit(":", 1)[0], int(t.rsplit(":", 1)[1])))
    return out


def check_compose(doc: Mapping[str, Any], where: str, code: Code, schema: Mapping[str, Any],
                  prometheus: Mapping[str, Any] | None = None) -> Report:
    import jsonschema

    r = Report()
    validator = jsonschema.Draft7Validator(schema)
    for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in e.absolute_path) or "(top)"
        r.problems.append(f"{where}: {path}: {e.message} (Compose Specification schema)")
    workloads, endpoints = compose_workloads(doc, where, code)
    for w in workloads:
        r.problems += check_env_names("\n".join(w.env), w.where, code)
    r.extend(check_workloads(workloads, code, endpoints))
    if prometheus is not None:
        by_service = {w.where.rsplit("service ", 1)[1]: w for w in workloads}
        for scrape_where, host, port in compose_scrapes(prometheus, "deploy/prometheus/prometheus.yml"):
            w = by_service.get(host)
            if w is None:
                r.problems.append(f"{scrape_where}: scrapes {host}, which is no jackpotd service of {where}")
            elif port != w.expected(code).get("metrics"):
                r.problems.append(f"{scrape_where}: scrapes {host}:{port} but {host}'s metrics port is "
                                  f"{w.expected(code).get('metrics', 'off')}")
    return r


# ------------------------------------------------------------------------------------------------- kubernetes

POD_OWNERS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


def _pod_template(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    kind = doc.get("kind")
    if kind in POD_OWNERS:
        return doc.get("spec", {}).get("template")
    if kind == "CronJob":
        return doc.get("spec", {}).get("jobTemplate", {}).get("spec", {}).get("template")
    if kind == "Pod":
        return doc
    return None


def _probe_port(probe: Mapping[str, Any] | None, named: Mapping[str, int]) -> int | None:
    if not probe:
        return None
    for how in ("tcpSocket", "httpGet", "grpc"):
        if how in probe:
            port = probe[how].get("port")
            return named.get(port, -1) if isinstance(port, str) else int(port)
    if "exec" in probe:
        return _target_port([str(a) for a in probe["exec"].get("command", [])])
    return None


def k8s_workloads(docs: list[tuple[str, Mapping[str, Any]]], code: Code) -> tuple[list[Workload], dict[str, set[int]]]:
    config_maps = {d["metadata"]["name"]: {str(k): str(v) for k, v in (d.get("data") or {}).items()}
                   for _, d in docs if d.get("kind") == "ConfigMap"}
    workloads: list[Workload] = []
    pods: list[tuple[Mapping[str, str], Workload]] = []
    for where, doc in docs:
        template = _pod_template(doc)
        if not template:
            continue
        labels = template.get("metadata", {}).get("labels", {}) or {}
        annotations = template.get("metadata", {}).get("annotations", {}) or {}
        for c in template.get("spec", {}).get("containers", []):
            if "jackpotd" not in str(c.get("image", "")):
                continue
            command = [str(a) for a in c.get("command") or []]
            env: dict[str, str] = {}
            for source in c.get("envFrom") or []:
                env.update(config_maps.get(source.get("configMapRef", {}).get("name", ""), {}))
            for e in c.get("env") or []:
                env[e["name"]] = str(e.get("value", ""))
            w = Workload(f"{where}: {doc['kind']} {doc['metadata']['name']}, container {c['name']}",
                         command[0] if command else "jackpotd", command[1:] + [str(a) for a in c.get("args") or []],
                         env)
            named = {p["name"]: int(p["containerPort"]) for p in c.get("ports") or [] if "name" in p}
            w.ports = [(p.get("name"), int(p["containerPort"])) for p in c.get("ports") or []]
            for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
                if (port := _probe_port(c.get(kind), named)) is not None:
                    w.probe_ports.append(port)
            if "prometheus.io/port" in annotations:
                w.metrics_scrape_ports.append(int(annotations["prometheus.io/port"]))
            workloads.append(w)
            pods.append((labels, w))
    endpoints: dict[str, set[int]] = {}
    for _, doc in docs:  # Services in front of gRPC pods: the ports a sign may name
        if doc.get("kind") != "Service":
            continue
        selector = doc.get("spec", {}).get("selector") or {}
        for labels, w in pods:
            if not selector or any(labels.get(k) != v for k, v in selector.items()):
                continue
            grpc = w.expected(code).get("grpc")
            for p in doc["spec"].get("ports", []):
                target = p.get("targetPort", p["port"])
                if grpc is not None and target in ("grpc", grpc):
                    endpoints.setdefault(doc["metadata"]["name"], set()).add(int(p["port"]))
    return workloads, endpoints


def _builtin(api_version: str) -> bool:
    group = api_version.rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")


def check_k8s(docs: list[tuple[str, Mapping[str, Any]]], code: Code) -> Report:
    from kubernetes_validate import utils as kv

    r = Report()
    for where, doc in docs:
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind") \
                or not (doc.get("metadata") or {}).get("name"):
            r.problems.append(f"{where}: a document without apiVersion, kind or metadata.name")
            continue
        what = f"{where}: {doc['kind']} {doc['metadata']['name']}"
        if not _builtin(doc["apiVersion"]):
            r.notes.append(f"{what} ({doc['apiVersion']}): a custom resource, shape checked only (no schema offline)")
            continue
        try:
            kv.validate(doc, K8S_VERSION, strict=True)
        except kv.ValidationError as e:
            path = ".".join(str(p) for p in e.path) or "(top)"
            r.problems.append(f"{what}: {path}: {e.message} (Kubernetes {K8S_VERSION} schema, strict)")
        except kv.SchemaNotFoundError:
            r.problems.append(f"{what}: no Kubernetes {K8S_VERSION} schema for {doc['apiVersion']} {doc['kind']}")
    workloads, endpoints = k8s_workloads(docs, code)
    for w in workloads:
        r.problems += check_env_names("\n".join(w.env), w.where, code)
    r.extend(check_workloads(workloads, code, endpoints))
    return r


# ---------------------------------------------------------------------------------------- (d) metrics and rules

def check_metric_names(expressions: Iterable[tuple[str, str]], code: Code) -> Report:
    """Every jackpotd_* name in the (where, PromQL) pairs is a metric of jackpotd/metrics.py."""
    r = Report()
    for where, expr in expressions:
        for name in sorted(set(METRIC_NAME.findall(expr)) - code.metrics):
            if name in PENDING_METRICS:
                r.warnings.append(f"{where}: {name} is not in jackpotd/metrics.py yet (announced; fine once it lands)")
            else:
                r.problems.append(f"{where}: {name} is not a metric of jackpotd/metrics.py (counters end in "
                                  "_total; histograms are _bucket, _sum, _count)")
    return r


def dashboard_expressions(dashboard: Mapping[str, Any], where: str) -> list[tuple[str, str]]:
    out = []

    def walk(panels: Iterable[Mapping[str, Any]]) -> None:
        for p in panels:
            for t in p.get("targets") or []:
                if "expr" in t:
                    out.append((f"{where}: panel {p.get('title')!r}", str(t["expr"])))
            walk(p.get("panels") or [])

    walk(dashboard.get("panels") or [])
    return out


def rule_expressions(groups: Iterable[Mapping[str, Any]], where: str) -> list[tuple[str, str]]:
    return [(f"{where}: {rule.get('alert') or rule.get('record')}", str(rule["expr"]))
            for g in groups for rule in g.get("rules", [])]


# ---------------------------------------------------------------------------------------------------- all of it

def _load_yaml_docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def check(root: Path = ROOT) -> Report:
    deploy = root / "deploy"
    code = read_code()
    r = Report()
    rel = lambda p: str(p.relative_to(root))  # noqa: E731

    # (c) names, everywhere in deploy/ but the vendored schemas
    for path in sorted(p for p in deploy.rglob("*") if p.is_file() and "schemas" not in p.parts):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        r.problems += check_env_names(text, rel(path), code)

    yaml_docs: dict[Path, list[Any]] = {}
    for path in sorted([*deploy.rglob("*.yaml"), *deploy.rglob("*.yml")]):
        if "schemas" in path.parts:
            continue
        try:
            yaml_docs[path] = _load_yaml_docs(path)
        except yaml.YAMLError as e:
            r.problems.append(f"{rel(path)}: not valid YAML: {e}")

    # (a) Kubernetes
    k8s = [(rel(p), d) for p, docs in yaml_docs.items() if p.parent == deploy / "k8s" for d in docs]
    if not k8s:
        r.problems.append("deploy/k8s: no manifests")
    r.extend(check_k8s(k8s, code))

    # (b) Compose, with the Prometheus scrape targets
    compose = deploy / "compose.yaml"
    prometheus = deploy / "prometheus" / "prometheus.yml"
    if compose in yaml_docs and prometheus in yaml_docs:
        schema = json.loads((deploy / "schemas" / "compose-spec.json").read_text())
        r.extend(check_compose(yaml_docs[compose][0], rel(compose), code, schema, yaml_docs[prometheus][0]))

    # (d) dashboard and rules
    try:
        dashboard = json.loads((deploy / "grafana" / "jackpotd.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        r.problems.append(f"deploy/grafana/jackpotd.json: not valid JSON: {e}")
        dashboard = {}
    expressions = dashboard_expressions(dashboard, "deploy/grafana/jackpotd.json")
    if dashboard and not expressions:
        r.problems.append("deploy/grafana/jackpotd.json: no panel has a query")
    alerts_path = deploy / "prometheus" / "alerts.yml"
    alert_groups = (yaml_docs.get(alerts_path) or [{}])[0].get("groups", [])
    expressions += rule_expressions(alert_groups, rel(alerts_path))
    rule_docs = [(w, d) for w, d in k8s if d.get("kind") == "PrometheusRule"]
    for where, doc in rule_docs:
        groups = doc.get("spec", {}).get("groups", [])
        expressions += rule_expressions(groups, where)
        theirs = {g["name"]: g for g in groups}
        for g in alert_groups:
            if theirs.get(g["name"]) != g:
                r.problems.append(f"{where}: group {g['name']!r} differs from {rel(alerts_path)}'s: "
                                  "keep them identical")
    r.extend(check_metric_names(expressions, code))
    return r


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="check_deploy.py", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    r = check()
    for note in r.notes:
        print(f"note: {note}")
    for warning in r.warnings:
        print(f"warning: {warning}")
    for problem in r.problems:
        print(f"error: {problem}", file=sys.stderr)
    if r.problems:
        print(f"deploy-check: {len(r.problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"deploy-check: OK (Kubernetes {K8S_VERSION} schemas, Compose Specification schema, settings, ports, "
          f"metrics; {len(r.warnings)} warning(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
