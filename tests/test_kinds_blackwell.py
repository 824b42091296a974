"""HGX B200: NVLink 5 with the fabric manager (and NVLSM), Blackwell on the open kernel module it requires. A
proprietary module on it is told from the kernel log's reason, and the fix is the module's flavor, not a modprobe."""

from __future__ import annotations

from tests.hostgen import faults
from tests.hostgen.kinds import KINDS
from tests.support.kinds import by_check, serious

B200 = KINDS["hgx-b200-noble"]


def test_hgx_b200_is_healthy() -> None:
    assert serious(B200) == {}
    found = by_check(B200)
    assert found["driver.fabricmanager"].status == "ok", found["driver.fabricmanager"].observed
    assert found["driver.version"].status == "ok" and "open kernel module" in found["driver.version"].observed
    assert found["nvlink.links"].status == "ok", found["nvlink.links"].observed


def test_hgx_b200_without_its_fabric_manager() -> None:
    assert serious(faults.fabricmanager_down(B200)) == {"driver.fabricmanager": "critical@host"}


def test_the_proprietary_module_on_blackwell_is_told_by_the_kernel_log() -> None:
    """Before: driver.version unknown (no module, no NVML) and driver.uvm high 'load nvidia_uvm', which cannot load
    while nvidia.ko itself refuses the GPUs."""
    broken = faults.proprietary_on_blackwell(B200)
    assert serious(broken) == {"driver.version": "critical@host"}
    version = by_check(broken)["driver.version"]
    assert version.fix is not None and "open kernel module flavor" in version.fix.summary
    assert "requires use of the NVIDIA open kernel modules" in version.observed
    assert by_check(broken)["driver.uvm"].status == "unknown"
