"""deploy/: the Kubernetes manifests against the Kubernetes OpenAPI schema (offline: kubernetes-validate ships
the schemas, strict so that a misspelt field fails), node-problem-detector's plugin config against NPD's own
rules, and every rigaudit command line in deploy/ against rigaudit's parser (no drift)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from rigaudit.orchestrator.commands.check import COMMAND as CHECK
from rigaudit.orchestrator.gate.verdict import MAX_REASON
from rigaudit.orchestrator.gate.watchdog import grace_s

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
K8S = DEPLOY / "kubernetes"
NPD = K8S / "node-problem-detector"
MANIFESTS = sorted(K8S.rglob("*.yaml"))
KUBERNETES_VERSIONS = ("1.28.0", "1.33.0")
"""An older release still common in fleets, and a recent one."""
_GO_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|m|s|ms|us|µs|ns))+$")
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def documents() -> list[tuple[str, dict[str, Any]]]:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with kubernetes-validate (pip install -e '.[dev]')")
    found = []
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                found.append((f"{path.relative_to(DEPLOY)}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


def go_duration(text: str) -> float:
    """Seconds of a Go ``time.ParseDuration`` string (what NPD parses); ValueError when Go would refuse it."""
    if not _GO_DURATION.fullmatch(text):
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * _UNIT[u] for n, u in _GO_PART.findall(text))


def test_the_manifests_are_found() -> None:
    names = {p.relative_to(K8S).as_posix() for p in MANIFESTS}
    assert names == {"rigaudit-daemonset.yaml", "node-problem-detector/daemonset.yaml", "condition-to-taint/draino.yaml"}


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_validates_against_the_kubernetes_schema(version: str) -> None:
    validator = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is not installed (pip install -e '.[dev]'; .ci/run does)"
    )
    docs = documents()
    assert len(docs) >= 8
    for name, doc in docs:
        try:
            validator.validate(doc, version, strict=True)
        except validator.ValidationError as exc:
            pytest.fail(f"{name} is not a valid Kubernetes {version} object: {exc.message} at {list(exc.path)}")


def test_a_misspelt_field_would_be_caught() -> None:
    """The strict schema refuses unknown fields: the validation above could fail."""
    validator = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed")
    _, daemonset = next((n, d) for n, d in documents() if d["kind"] == "DaemonSet")
    broken = json.loads(json.dumps(daemonset))
    broken["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []
    with pytest.raises(validator.ValidationError):
        validator.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def _pod(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("name", ["rigaudit-daemonset.yaml", "node-problem-detector/daemonset.yaml"])
def test_the_daemonsets_read_the_host_and_change_nothing(name: str) -> None:
    [daemonset] = [d for n, d in documents() if n.startswith(f"kubernetes/{name}:DaemonSet/")]
    pod = _pod(daemonset)
    [container] = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert not security.get("privileged", False) and security["capabilities"]["drop"] == ["ALL"]
    assert pod.get("hostNetwork") is not True
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host_paths["sys"] == "/sys"
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["sys"]["mountPath"] == "/sys" and mounts["sys"]["readOnly"] is True
    writable = {v for v in host_paths if not mounts[v].get("readOnly")}
    assert writable <= {"results", "textfile"}  # only where rigaudit writes its own results
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and pod["runtimeClassName"] == "nvidia"
    assert "resources" in container and "nvidia.com/gpu" not in json.dumps(container["resources"])  # takes no GPU


def _rigaudit_argv(script: str) -> list[list[str]]:
    """Every ``rigaudit check ...`` command in a shell script (continuations joined)."""
    joined = script.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words[:2] == ["rigaudit", "check"]:
            found.append(words[1:])
    return found


def parses(argv: list[str]) -> None:
    assert argv[0] == "check", argv
    parser = argparse.ArgumentParser(prog="rigaudit check")
    CHECK.add_arguments(parser)
    try:
        parser.parse_args(argv[1:])
    except SystemExit as exc:
        pytest.fail(f"rigaudit {' '.join(argv)}: rejected by the parser (exit {exc.code})")


def test_the_daemonset_runs_a_command_rigaudit_accepts() -> None:
    [daemonset] = [d for n, d in documents() if n.startswith("kubernetes/rigaudit-daemonset.yaml:DaemonSet/")]
    [container] = _pod(daemonset)["containers"]
    [command] = _rigaudit_argv(container["args"][0])
    parses(command)
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    for option in ("--json", "--prometheus", "--expect"):
        target = Path(command[command.index(option) + 1])
        assert any(target.is_relative_to(m) for m in mounts), f"{option} {target} is on no mounted volume"
    assert command[command.index("--prometheus") + 1].endswith(".prom")


def test_the_npd_plugin_follows_npds_rules_and_rigaudits_parser() -> None:
    config = json.loads((NPD / "rigaudit-plugin.json").read_text())
    # What NPD's CustomPluginConfig.ApplyConfiguration and Validate check (pkg/custompluginmonitor/types):
    assert config["plugin"] == "custom"
    global_timeout = go_duration(config["pluginConfig"]["timeout"])
    assert go_duration(config["pluginConfig"]["invoke_interval"]) >= global_timeout
    assert config["pluginConfig"]["max_output_length"] >= MAX_REASON  # the whole reason line is the message
    conditions = {c["type"] for c in config["conditions"]}
    assert all(c["reason"] and c["message"] for c in config["conditions"])
    [rule] = config["rules"]
    assert rule["type"] in ("temporary", "permanent")
    assert rule["type"] != "permanent" or rule["condition"] in conditions
    rule_timeout = go_duration(rule["timeout"])
    assert rule_timeout <= global_timeout
    assert Path(rule["path"]).name == "rigaudit" and Path(rule["path"]).is_absolute()
    parses(rule["args"])
    assert "--quiet" in rule["args"]  # NPD takes the output as the condition's message: one line
    deadline = float(rule["args"][rule["args"].index("--deadline") + 1])
    assert deadline + grace_s(deadline) < rule_timeout  # rigaudit answers before NPD kills it


def test_the_npd_configmap_holds_the_plugin_file() -> None:
    [configmap] = [d for n, d in documents() if n.endswith(":ConfigMap/rigaudit-npd-plugin")]
    assert json.loads(configmap["data"]["rigaudit-plugin.json"]) == json.loads((NPD / "rigaudit-plugin.json").read_text())
    [daemonset] = [d for n, d in documents() if n.startswith("kubernetes/node-problem-detector/daemonset.yaml:DaemonSet/")]
    args = _pod(daemonset)["containers"][0]["args"]
    assert "--config.custom-plugin-monitor=/config/rigaudit-plugin.json" in args


def test_go_durations_are_parsed_as_go_does() -> None:
    assert go_duration("1m30s") == 90 and go_duration("300s") == 300 and go_duration("1.5h") == 5400
    for bad in ("60", "5 s", "s", ""):
        with pytest.raises(ValueError):
            go_duration(bad)


def test_the_slurm_examples_pass_options_rigaudit_accepts() -> None:
    for name in ("prolog.sh", "epilog.sh"):
        words = shlex.split((DEPLOY / "slurm" / name).read_text(), comments=True)
        assert words[:2] == ["exec", "/usr/local/sbin/rigaudit-health"]
        check_options = words[words.index("--") + 1 :]
        parses(["check", *check_options, "--expect", "/etc/rigaudit/expect.conf"])
    conf = (DEPLOY / "slurm" / "slurm-health.conf").read_text()
    [args] = re.findall(r'^RIGAUDIT_ARGS="([^"]*)"', conf, re.M)
    parses(["check", *args.split()])


def test_the_example_expectations_parse() -> None:
    from rigaudit.orchestrator.gate.expect import parse_expectations

    assert parse_expectations((DEPLOY / "expect.conf").read_text()).values["gpus"] == 8
    configmaps = [d for n, d in documents() if n.endswith(":ConfigMap/rigaudit-expect")]
    assert len(configmaps) == 2 and configmaps[0] == configmaps[1]  # both files define it, the same: either order
    assert parse_expectations(configmaps[0]["data"]["expect.conf"]).values["gpus"] == 8


def _file_documents(path: Path) -> list[dict[str, Any]]:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with kubernetes-validate")
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _needs(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """The (kind, namespace/name) objects ``doc`` refers to and cannot run without."""
    meta = doc["metadata"]
    found: set[tuple[str, str]] = set()
    if "namespace" in meta:
        found.add(("Namespace", meta["namespace"]))
    if doc["kind"] in ("DaemonSet", "Deployment"):
        pod = _pod(doc)
        found.add(("ServiceAccount", f"{meta['namespace']}/{pod.get('serviceAccountName', 'default')}"))
        for volume in pod.get("volumes", []):
            if "configMap" in volume and not volume["configMap"].get("optional"):
                found.add(("ConfigMap", f"{meta['namespace']}/{volume['configMap']['name']}"))
    if doc["kind"] == "ClusterRoleBinding":
        found.add(("ClusterRole", doc["roleRef"]["name"]))
        found.update(("ServiceAccount", f"{s['namespace']}/{s['name']}") for s in doc["subjects"])
    return found


def _defines(doc: dict[str, Any]) -> tuple[str, str]:
    meta = doc["metadata"]
    return doc["kind"], f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.relative_to(K8S).as_posix())
def test_each_manifest_applies_alone(path: Path) -> None:
    """Everything a file's objects refer to (namespace, service account, ConfigMap volume, RBAC) is in that file,
    so `kubectl apply -f FILE` alone leaves no pod waiting on a missing volume or account."""
    docs = _file_documents(path)
    defined = {_defines(d) for d in docs}
    needed = set().union(*(_needs(d) for d in docs))
    assert needed - defined == set(), f"{path.name} needs objects defined elsewhere"


BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
"""What Pod Security "baseline" lets a container add (kubernetes.io/docs/concepts/security/pod-security-standards)."""
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}


def pod_security_level(pod: dict[str, Any]) -> str:
    """The strictest Pod Security Standard ``pod`` meets (the controls its manifests touch)."""
    containers = pod["containers"]
    securities = [c.get("securityContext", {}) for c in containers]
    added = {cap for s in securities for cap in s.get("capabilities", {}).get("add", [])}
    baseline = not (
        any(pod.get(k) for k in ("hostPID", "hostIPC", "hostNetwork"))
        or any("hostPath" in v for v in pod.get("volumes", []))
        or any(s.get("privileged") for s in securities)
        or added - BASELINE_CAPABILITIES
        or any(p.get("hostPort") for c in containers for p in c.get("ports", []))
    )
    if not baseline:
        return "privileged"
    restricted = (
        all(s.get("allowPrivilegeEscalation") is False for s in securities)
        and all(s.get("runAsNonRoot") is True or pod.get("securityContext", {}).get("runAsNonRoot") for s in securities)
        and all(s.get("capabilities", {}).get("drop") == ["ALL"] for s in securities)
        and added <= {"NET_BIND_SERVICE"}
        and all(
            (s.get("seccompProfile") or pod.get("securityContext", {}).get("seccompProfile", {})).get("type")
            in ("RuntimeDefault", "Localhost")
            for s in securities
        )
        and all(set(v) - {"name"} <= RESTRICTED_VOLUMES for v in pod.get("volumes", []))
    )
    return "restricted" if restricted else "baseline"


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.relative_to(K8S).as_posix())
def test_each_namespace_states_the_pod_security_level_its_pods_need(path: Path) -> None:
    docs = _file_documents(path)
    pods = [(d["metadata"]["namespace"], _pod(d)) for d in docs if d["kind"] in ("DaemonSet", "Deployment")]
    labels = {d["metadata"]["name"]: d["metadata"].get("labels", {}) for d in docs if d["kind"] == "Namespace"}
    for namespace, pod in pods:
        need = pod_security_level(pod)
        stated = labels[namespace].get("pod-security.kubernetes.io/enforce")
        assert stated == need, f"{path.name}: namespace {namespace} enforces {stated}, its pods need {need}"
        assert f'Pod Security: "{need}"' in path.read_text(), f"{path.name} does not say the level it needs, and why"


def test_the_pod_security_check_tells_the_levels_apart() -> None:
    [npd] = [d for n, d in documents() if n.startswith("kubernetes/node-problem-detector/daemonset.yaml:DaemonSet/")]
    pod = json.loads(json.dumps(_pod(npd)))
    assert pod_security_level(pod) == "privileged"
    pod.pop("hostPID")
    pod["volumes"] = [v for v in pod["volumes"] if "hostPath" not in v]
    pod["containers"][0]["securityContext"]["capabilities"]["add"] = []
    assert pod_security_level(pod) == "baseline"


DRAINO_FLAGS = {
    "--debug", "--listen", "--kubeconfig", "--master", "--dry-run", "--max-grace-period", "--eviction-headroom",
    "--drain-buffer", "--node-label", "--node-label-expr", "--namespace", "--leader-election-lease-duration",
    "--leader-election-renew-deadline", "--leader-election-retry-period", "--skip-drain", "--evict-daemonset-pods",
    "--evict-statefulset-pods", "--evict-emptydir-pods", "--evict-unreplicated-pods", "--allow-force-delete",
    "--protected-pod-annotation", "--ignore-safe-to-evict-annotation",
}  # fmt: skip
"""draino's flags (its README's `draino --help`)."""


def test_draino_cordons_on_the_condition_npd_sets() -> None:
    """GPUHostProblem=True (NPD's rule, on rigaudit's exit 1) -> draino cordons -> the node controller's
    node.kubernetes.io/unschedulable:NoSchedule taint. The condition draino watches is the one the plugin sets,
    on GPU nodes only, and draino may update nodes."""
    docs = _file_documents(K8S / "condition-to-taint" / "draino.yaml")
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    [container] = _pod(deployment)["containers"]
    command = container["command"]
    assert command[0] == "/draino"
    flags = {a.split("=", 1)[0] for a in command[1:] if a.startswith("-")}
    assert flags <= DRAINO_FLAGS and "--skip-drain" in flags and "--dry-run" not in flags
    conditions = [a for a in command[1:] if not a.startswith("-")]
    plugin = json.loads((NPD / "rigaudit-plugin.json").read_text())
    [rule] = plugin["rules"]
    assert conditions == [rule["condition"]] and rule["type"] == "permanent"
    assert any("nvidia.com/gpu.present" in a for a in command if a.startswith("--node-label"))
    [role] = [d for d in docs if d["kind"] == "ClusterRole"]
    assert any("nodes" in r["resources"] and "update" in r["verbs"] for r in role["rules"])
