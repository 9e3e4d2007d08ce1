"""The Kubernetes manifests validate against a recent Kubernetes, and say what the service needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
KUBERNETES = "1.32.0"


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_validates_strictly(path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def load(kind: str) -> dict[str, Any]:
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc["kind"] == kind:
                return dict(doc)
    raise AssertionError(f"no {kind}")


def test_the_deployment_probes_runs_unprivileged_and_stops_gracefully() -> None:
    pod = load("Deployment")["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert pod["spec"]["terminationGracePeriodSeconds"] >= 20
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp"}


def test_autoscaling_and_disruption_budget_target_the_deployment() -> None:
    hpa, pdb = load("HorizontalPodAutoscaler"), load("PodDisruptionBudget")
    assert hpa["spec"]["scaleTargetRef"]["name"] == load("Deployment")["metadata"]["name"]
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    assert pdb["spec"]["selector"] == load("Deployment")["spec"]["selector"]
