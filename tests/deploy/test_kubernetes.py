"""deploy/kubernetes/: every manifest valid against Kubernetes' own schemas (kubernetes-validate,
strict: an unknown or misspelt field fails), and wired together: selectors, ports, volumes,
probes that run the image's health check, voices the init container fetches, memory sized
from the measured server RSS."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO_ROOT

kubernetes_validate = pytest.importorskip("kubernetes_validate")

MANIFESTS = REPO_ROOT / "deploy" / "kubernetes"
KUBERNETES_VERSION = "1.30.0"
"""The oldest Kubernetes release still maintained by the big distributions the manifests
must apply to; newer ones accept these fields too."""
MEASURED_MIB = {"idle": 878, "peak": 985}
"""`python -m benchmarks.server rss`, one full-size neural voice (int8 BERT): RSS of a warm idle
replica and the peak while speaking (docs/deployment.md)."""


def _documents() -> list[tuple[Path, dict]]:
    docs = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path, doc))
    return docs


def _kind(kind: str) -> dict:
    found = [doc for _, doc in _documents() if doc["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _mib(quantity: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Mi|Gi)", quantity)
    assert m, f"memory quantity {quantity!r}: use Mi or Gi"
    return float(m.group(1)) * (1024 if m.group(2) == "Gi" else 1)


@pytest.mark.parametrize(
    "path,doc", _documents(), ids=[f"{p.name}:{d['kind']}" for p, d in _documents()]
)
def test_manifest_is_valid_against_the_kubernetes_schema(path, doc):
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as err:
        pytest.fail(f"{path.name}: {err.message} at {'.'.join(map(str, err.path))}")


def test_the_validator_rejects_a_misspelt_field():
    """The check above can fail: a typo in a probe is caught, not ignored."""
    deployment = yaml.safe_load((MANIFESTS / "deployment.yaml").read_text())
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"]["periodSecond"] = container["readinessProbe"].pop("periodSeconds")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_expected_objects_are_all_there():
    kinds = sorted(doc["kind"] for _, doc in _documents())
    assert kinds == ["Deployment", "PersistentVolumeClaim", "PodDisruptionBudget", "Service"]


def test_service_and_budget_select_the_deployment_pods_and_reach_the_wyoming_port():
    deployment, service = _kind("Deployment"), _kind("Service")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert _kind("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    (port,) = service["spec"]["ports"]
    assert port["port"] == 10200 and ports[port["targetPort"]] == 10200
    assert port["protocol"] == "TCP"


def test_probes_run_the_images_wyoming_health_check():
    pod = _kind("Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        command = container[probe]["exec"]["command"]
        assert command[:2] == ["python", "/opt/hayakoe/healthcheck.py"], probe
        # the probe's own timeout must be shorter than the kubelet's
        timeout = float(command[command.index("--timeout") + 1])
        assert timeout < container[probe]["timeoutSeconds"], probe
    # the image puts the script there (the same file the Docker HEALTHCHECK runs)
    for dockerfile in ("Dockerfile.arm64", "Dockerfile.amd64"):
        text = (REPO_ROOT / dockerfile).read_text()
        assert "COPY docker/entrypoint.sh docker/healthcheck.py /opt/hayakoe/" in text
    # loading may take minutes: the start-up probe covers it, liveness never kills a loader
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 180


def test_voice_cache_is_the_claimed_volume_and_the_init_container_fills_it():
    pod = _kind("Deployment")["spec"]["template"]["spec"]
    claim = _kind("PersistentVolumeClaim")
    volumes = {v["name"]: v for v in pod["volumes"]}
    (container,) = pod["containers"]
    (init,) = pod["initContainers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    cache_volume = volumes[mounts[env["HAYAKOE_CACHE"]]]
    assert cache_volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    # the init container downloads into the same volume, and only voices the server loads
    args = init["args"]
    assert args[0] == "download"
    init_mounts = {m["mountPath"]: m["name"] for m in init["volumeMounts"]}
    assert init_mounts[args[args.index("--cache-dir") + 1]] == mounts[env["HAYAKOE_CACHE"]]
    fetched = {args[i + 1] for i, a in enumerate(args) if a == "--voice"}
    served = set(env["HAYAKOE_VOICES"].replace(",", " ").split())
    assert fetched and fetched <= served
    assert init["image"] == container["image"]
    # several replicas share one claim
    if _kind("Deployment")["spec"]["replicas"] > 1:
        assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    # the token only ever comes from a Secret
    for c in (container, init):
        for e in c.get("env", []):
            if "TOKEN" in e["name"]:
                assert "secretKeyRef" in e["valueFrom"] and "value" not in e


def test_memory_is_sized_from_the_measured_rss():
    (container,) = _kind("Deployment")["spec"]["template"]["spec"]["containers"]
    resources = container["resources"]
    request = _mib(resources["requests"]["memory"])
    limit = _mib(resources["limits"]["memory"])
    assert request >= MEASURED_MIB["idle"], "a warm replica would be over its request"
    assert limit >= 1.25 * MEASURED_MIB["peak"], "too little room over the measured peak"
    assert request <= limit
    assert "cpu" not in resources["limits"], "a CPU limit throttles synthesis into stutter"
    comment = (MANIFESTS / "deployment.yaml").read_text()
    assert f"{MEASURED_MIB['peak']} MiB peak" in comment, "the manifest quotes the figures"


def test_runs_as_the_images_non_root_user_with_a_read_only_root():
    pod = _kind("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == 1000 and pod["securityContext"]["fsGroup"] == 1000
    for c in pod["containers"] + pod["initContainers"]:
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
    # the drain on SIGTERM fits in the grace period
    assert pod["terminationGracePeriodSeconds"] >= 15
