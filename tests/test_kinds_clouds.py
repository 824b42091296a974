"""Cloud guests and a pod on one: GCP a3-highgpu-8g, a GKE pod on it, and an Azure ND H100 v5 Hyper-V guest.
Healthy as generated (nothing at medium or above); each injected fault found, at the layer that can fix it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.hostgen import faults
from tests.hostgen.kinds import KINDS
from tests.hostgen.spec import HostSpec
from tests.support.kinds import by_check, serious

CLOUDS = ["gcp-a3-highgpu-8g", "gke-a3-pod", "azure-nd-h100-v5"]


@pytest.mark.parametrize("name", CLOUDS)
def test_a_healthy_cloud_kind_has_no_serious_problem(name: str) -> None:
    assert serious(KINDS[name]) == {}


def test_azure_is_told_a_hyper_v_guest() -> None:
    found = by_check(KINDS["azure-nd-h100-v5"])
    assert found["pcie.acs"].status == "not_applicable", found["pcie.acs"].observed
    assert found["firmware.cppc"].status == "not_applicable"


FAULTS: list[tuple[str, Callable[[HostSpec], HostSpec], str, str]] = [
    ("gcp-a3-highgpu-8g", faults.fabricmanager_down, "driver.fabricmanager", "critical@host"),
    ("gke-a3-pod", lambda s: faults.shm(s, 64 * 2**20), "container.shm", "high@container_config"),
    ("azure-nd-h100-v5", faults.fabricmanager_down, "driver.fabricmanager", "critical@host"),
]


@pytest.mark.parametrize(("name", "fault", "check", "verdict"), FAULTS, ids=[f"{n}-{c}" for n, _, c, _ in FAULTS])
def test_an_injected_fault_is_found_where_it_is_fixed(
    name: str, fault: Callable[[HostSpec], HostSpec], check: str, verdict: str
) -> None:
    found = serious(fault(KINDS[name]))
    assert found.get(check) == verdict, found
    assert set(found) - {check} <= {"p2p.status"}, found  # the fabric's consequence, as on the HGX archetype
