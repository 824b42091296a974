"""Where the driver comes from decides the driver rules' verdicts and fixes (the fifth review's W1, W2, W6, W7, W10).

A GPU Operator node's fabric manager and persistence daemon run in the Operator's driver container; a hypervisor
that passes its GPUs through with vfio-pci runs no driver at all; Ubuntu's precompiled modules come in packages, not
DKMS builds; a DKMS build whose make.log shows a compile error fails again when rebuilt; a key queued for enrolment
needs only the reboot that enrolls it.
"""

from __future__ import annotations

from rigaudit.tools.schema.finding import Finding
from tests.hostgen import ARCHETYPES
from tests.hostgen import driver_origin as origin
from tests.hostgen.kinds import KINDS
from tests.support.kinds import by_check, serious

HGX = ARCHETYPES["hgx-h100-jammy"]


def _actions(finding: Finding) -> str:
    assert finding.fix is not None
    return " ".join(
        [finding.fix.summary, *(a.description + " " + " ".join(getattr(a, "argv", ()) or ()) for a in finding.fix.actions)]
    )


def test_an_operator_node_s_fabric_manager_is_judged_by_its_process_not_a_host_unit() -> None:
    spec = origin.gpu_operator(HGX)
    found = by_check(spec)
    assert found["driver.fabricmanager"].status == "ok"
    assert "GPU Operator" in found["driver.fabricmanager"].observed
    assert found["driver.dkms"].status == "not_applicable"  # never a host build under the Operator's driver
    assert found["driver.fabricmanager_version"].status == "not_applicable"
    assert found["driver.persistence"].status == "unknown"
    assert "driver container" in found["driver.persistence"].observed
    assert not {c for c in serious(spec) if c.startswith("driver.")}


def test_an_operator_node_without_its_fabric_manager_is_told_to_look_at_the_driver_pod() -> None:
    found = by_check(origin.gpu_operator(HGX, fabricmanager=False))["driver.fabricmanager"]
    assert (found.status, found.severity) == ("problem", "critical")
    text = _actions(found)
    assert "driver pod" in text and "nvidia-driver-daemonset" in text
    assert "systemctl" not in text  # no host unit to start


def test_a_vfio_passthrough_hypervisor_runs_no_driver_to_judge() -> None:
    spec = origin.vfio_passthrough(HGX)
    found = by_check(spec)
    for check in (
        "driver.fabricmanager",
        "driver.persistence",
        "driver.uvm",
        "driver.version",
        "driver.dkms",
        "driver.secure_boot",
    ):
        assert found[check].status == "not_applicable", (check, found[check].observed)
        assert "vfio-pci" in found[check].observed
    assert not {c for c in serious(spec) if c.startswith("driver.")}


def test_precompiled_modules_are_installed_as_packages_not_built() -> None:
    found = by_check(origin.precompiled_newer_kernel(HGX))["driver.dkms"]
    assert (found.status, found.severity) == ("problem", "medium")
    text = _actions(found)
    assert "linux-modules-nvidia-550-server-5.15.0-127-generic" in text
    assert "dkms autoinstall" not in text


def test_a_build_that_fails_to_compile_is_not_rebuilt() -> None:
    found = by_check(origin.dkms_build_failed(KINDS["mps-h100pcie-replicas"]))["driver.dkms"]
    assert (found.status, found.severity) == ("problem", "medium")
    text = _actions(found)
    assert "does not compile for 6.14.0-29-generic" in text and "has no member named 'date'" in text
    assert "keep the next boot on 6.8.0-49-generic" in text
    assert not any(getattr(a, "argv", None) == ("dkms", "autoinstall", "-k", "6.14.0-29-generic") for a in found.fix.actions)  # type: ignore[union-attr]


def test_a_key_queued_for_enrolment_needs_the_reboot_that_enrolls_it_and_every_check_reads_the_refusal() -> None:
    found = by_check(origin.mok_pending(HGX))
    secure = found["driver.secure_boot"]
    assert (secure.status, secure.severity) == ("problem", "high")
    assert "unavailable key is rejected" in secure.observed and "queued for enrolment" in secure.observed
    assert "MokManager" in _actions(secure) and "mokutil --import" not in _actions(secure)
    uvm = found["driver.uvm"]
    assert "driver.secure_boot" in uvm.observed and "cause unknown" not in uvm.observed
