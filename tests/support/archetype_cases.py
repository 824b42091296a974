"""The cases of the archetype verdict tests: what the audit concludes on every generated archetype and on faults
injected into them: the expected status, severity and fix layer of every check, as an expert would judge them
(docs/validation/archetypes.md says why).

``EXPECTED`` lists, per archetype, every check whose verdict is not ``ok``: a problem as ``severity@layer``, else
``na`` or ``unknown``; every check not listed must be ``ok``. ``FAULTS`` injects one fault into an archetype and
names the verdict the fault must produce.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from rigaudit.tools.schema.audit import AuditResult
from rigaudit.tools.schema.finding import CommandAction, Finding, PciRegisterAction, SysfsWriteAction
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.spec import HostSpec
from tests.support.audits import audited

EXPECTED: dict[str, dict[str, str]] = {
    "aws-p5-vm": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "pcie.mps": "na",
        "firmware.cppc": "na",
        "pcie.acs": "na",
        "power.governor": "unknown",
        "power.scaling_driver": "unknown",
        "power.epp": "unknown",
        "power.boost": "unknown",
        "p2p.bandwidth": "unknown",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "dgx-a100-mig": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "power.scaling_driver": "low@host",
        "power.epp": "na",
        "power.cstates": "low@host",
        "p2p.status": "na",
        "p2p.bandwidth": "unknown",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
        "runtime.cuda_driver_compat": "low@host",
    },
    "docker-h100-bm": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "firmware.cppc": "na",
        "driver.dkms": "unknown",
        "driver.fabricmanager_version": "unknown",
        "gpu.xid": "unknown",
        "gpu.gsp": "unknown",
        "power.cstates": "low@container_host",
        "p2p.bandwidth": "unknown",
    },
    "docker-host-h100": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "firmware.cppc": "na",
        "power.cstates": "low@host",
        "p2p.bandwidth": "unknown",
        "container.gpu_devices": "na",
        "container.cgroup_cpu": "na",
    },
    "docker-in-gcp-vm": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "pcie.mps": "na",
        "firmware.cppc": "na",
        "numa.balancing": "na",
        "numa.zone_reclaim": "na",
        "numa.irq_affinity": "na",
        "numa.nic_affinity": "na",
        "pcie.acs": "na",
        "driver.peermem": "na",
        "driver.fabricmanager": "na",
        "driver.dkms": "unknown",
        "driver.fabricmanager_version": "na",
        "cuda.mig": "na",
        "gpu.xid": "unknown",
        "gpu.gsp": "unknown",
        "power.governor": "unknown",
        "power.scaling_driver": "unknown",
        "power.epp": "unknown",
        "power.boost": "unknown",
        "p2p.status": "low@hypervisor",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.shm": "high@container_config",
    },
    "epyc-nps4-l40s": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "numa.nic_affinity": "low@host",
        "driver.peermem": "low@host",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "cuda.mig": "na",
        "power.scaling_driver": "medium@host",
        "power.epp": "na",
        "power.cstates": "low@host",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "gcp-g2-2xl4-vm": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "pcie.mps": "na",
        "firmware.cppc": "na",
        "numa.balancing": "na",
        "numa.zone_reclaim": "na",
        "numa.irq_affinity": "na",
        "numa.nic_affinity": "na",
        "pcie.acs": "na",
        "driver.peermem": "na",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "cuda.mig": "na",
        "power.governor": "unknown",
        "power.scaling_driver": "unknown",
        "power.epp": "unknown",
        "power.boost": "unknown",
        "p2p.status": "low@hypervisor",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "geforce-4x4090": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "numa.balancing": "na",
        "numa.zone_reclaim": "na",
        "numa.irq_affinity": "na",
        "numa.nic_affinity": "na",
        "driver.peermem": "na",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "cuda.mig": "na",
        "cuda.ecc_mode": "na",
        "gpu.ecc_errors": "na",
        "gpu.app_clocks": "na",
        "gpu.retired_pages": "na",
        "power.boost": "unknown",
        "power.cstates": "low@host",
        "p2p.status": "na",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "gh200-node": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "driver.vgpu_license": "na",
        "firmware.vbios_consistency": "na",
        "firmware.cppc": "na",
        "pcie.acs": "na",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "power.epp": "na",
        "power.boost": "na",
        "p2p.status": "na",
        "p2p.bandwidth": "na",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "proxmox-q35-h100pcie-vm": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "firmware.cppc": "na",
        "numa.balancing": "na",
        "numa.zone_reclaim": "na",
        "numa.irq_affinity": "na",
        "numa.nic_affinity": "na",
        "pcie.mps": "na",
        "pcie.acs": "na",
        "driver.peermem": "na",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "power.governor": "unknown",
        "power.scaling_driver": "unknown",
        "power.epp": "unknown",
        "power.boost": "unknown",
        "p2p.status": "high@hypervisor",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "hgx-h100-jammy": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "firmware.cppc": "na",
        "power.cstates": "low@host",
        "p2p.bandwidth": "unknown",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "hgx-h100-upgraded-no-reboot": {
        "driver.confidential_computing": "unknown",  # NVML refuses every query: its CC state is unread
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "firmware.rebar": "unknown",
        "firmware.cppc": "na",
        "driver.version": "unknown",
        "driver.persistence": "unknown",
        "driver.fabricmanager": "critical@host",
        "driver.library_mismatch": "high@host",
        "cuda.compute_mode": "unknown",
        "cuda.mig": "unknown",
        "cuda.memory_in_use": "unknown",
        "cuda.ecc_mode": "unknown",
        "cuda.foreign_processes": "unknown",
        "gpu.thermals": "unknown",
        "gpu.clocks": "unknown",
        "gpu.ecc_errors": "unknown",
        "gpu.app_clocks": "unknown",
        "gpu.retired_pages": "unknown",
        "power.cstates": "low@host",
        "power.gpu_power_limit": "unknown",
        "power.gpu_pstate": "unknown",
        "p2p.status": "unknown",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "unknown",
        "nvlink.errors": "unknown",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
        "runtime.torch_cuda": "unknown",
        "runtime.cuda_driver_compat": "unknown",
        "runtime.device_order": "unknown",
    },
    "hgx-h200-noble": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "power.boost": "unknown",
        "power.cstates": "low@host",
        "p2p.bandwidth": "unknown",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "intel-snc-h100pcie": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "firmware.cppc": "na",
        "numa.nic_affinity": "na",
        "driver.peermem": "na",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "power.cstates": "low@host",
        "p2p.status": "low@host",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "k8s-pod-h100": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "firmware.cppc": "na",
        "driver.dkms": "unknown",
        "driver.fabricmanager_version": "unknown",
        "gpu.xid": "unknown",
        "gpu.gsp": "unknown",
        "power.cstates": "low@container_host",
        "p2p.bandwidth": "unknown",
    },
    "l40s-pex-iommu": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "driver.vgpu_license": "na",
        "firmware.cppc": "na",
        "numa.nic_affinity": "na",
        "pcie.acs": "high@host",
        "driver.peermem": "na",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "cuda.mig": "na",
        "power.cstates": "low@host",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "h100nvl-bridged-pairs": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "firmware.cppc": "na",
        "numa.nic_affinity": "low@host",
        "driver.peermem": "low@host",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "driver.vgpu_license": "na",
        "power.cstates": "low@host",
        "p2p.bandwidth": "unknown",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "kvm-vgpu-h100-guest": {
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "firmware.rebar": "na",
        "firmware.cppc": "na",
        "numa.balancing": "na",
        "numa.zone_reclaim": "na",
        "numa.irq_affinity": "na",
        "numa.nic_affinity": "na",
        "pcie.link": "unknown",
        "pcie.mps": "na",
        "pcie.acs": "na",
        "driver.peermem": "na",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "cuda.mig": "na",
        "gpu.thermals": "unknown",
        "gpu.clocks": "unknown",
        "gpu.app_clocks": "unknown",
        "gpu.retired_pages": "unknown",
        "power.governor": "unknown",
        "power.scaling_driver": "unknown",
        "power.epp": "unknown",
        "power.boost": "unknown",
        "power.gpu_power_limit": "unknown",
        "p2p.status": "medium@hypervisor",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
    "ws-rtx6000ada": {
        "gpu.ecc_errors": "na",  # ECC off as the board ships: NVML counts no error
        "driver.confidential_computing": "na",
        "driver.cdi_spec": "na",
        "driver.imex": "na",
        "nccl.topo_file": "na",
        "kernel.grace_boot": "na",
        "firmware.cppc": "na",
        "numa.balancing": "na",
        "numa.zone_reclaim": "na",
        "numa.irq_affinity": "na",
        "numa.nic_affinity": "na",
        "driver.peermem": "na",
        "driver.fabricmanager": "na",
        "driver.fabricmanager_version": "na",
        "driver.vgpu_license": "na",
        "cuda.mig": "na",
        "power.cstates": "low@host",
        "p2p.status": "na",
        "p2p.bandwidth": "unknown",
        "nvlink.links": "na",
        "nvlink.errors": "na",
        "container.gpu_devices": "na",
        "container.shm": "na",
        "container.cgroup_cpu": "na",
    },
}


def verdict(finding: Finding) -> str:
    if finding.status == "problem":
        return f"{finding.severity}@{finding.fix.where if finding.fix else '-'}"
    return {"ok": "ok", "not_applicable": "na", "unknown": "unknown"}[finding.status]


def patched_p2p_with_p2p_disabled(spec: HostSpec) -> HostSpec:
    """GeForce cards on a driver built with P2P (NVML: OK on every pair) and a server left with NCCL_P2P_DISABLE=1."""
    return faults.server_env(faults.p2p_driver(spec), NCCL_P2P_DISABLE="1")


def memlock_with_rdma(spec: HostSpec) -> HostSpec:
    """A container given the host's RDMA devices (/dev/infiniband) with a small locked-memory limit."""
    return faults.rdma_passed_in(faults.memlock(spec))


def patched_p2p_with_small_bar1(spec: HostSpec) -> HostSpec:
    """GeForce cards on a driver built with P2P, Resizable BAR off: the P2P path maps VRAM through BAR1."""
    return faults.bar1_small(faults.p2p_driver(spec))


FAULTS: list[tuple[str, Callable[..., HostSpec], dict[str, Any], str, str]] = [
    ("hgx-h100-jammy", faults.fabricmanager_down, {}, "driver.fabricmanager", "critical@host"),
    ("gh200-node", faults.numa_balancing_on, {}, "numa.balancing", "medium@host"),
    ("gh200-node", faults.governor, {"name": "schedutil"}, "power.governor", "medium@host"),
    ("hgx-h100-jammy", faults.fabricmanager_down, {}, "p2p.status", "critical@host"),
    ("hgx-h100-jammy", faults.fabricmanager_down, {}, "nvlink.links", "unknown"),
    ("geforce-4x4090", faults.p2p_driver, {}, "p2p.status", "ok"),
    ("gcp-g2-2xl4-vm", faults.server_env, {"NCCL_P2P_DISABLE": "1"}, "nccl.env", "ok"),
    ("docker-in-gcp-vm", faults.server_env, {"NCCL_SHM_DISABLE": "1"}, "nccl.env", "high@container_config"),
    ("aws-p5-vm", faults.nvlink_down, {}, "nvlink.links", "high@hypervisor"),
    ("aws-p5-vm", faults.link_degraded, {}, "pcie.link", "medium@hypervisor"),
    ("geforce-4x4090", patched_p2p_with_p2p_disabled, {}, "nccl.env", "high@host"),
    ("hgx-h100-jammy", faults.peermem_unloaded, {}, "driver.peermem", "medium@host"),
    ("hgx-h200-noble", faults.peermem_unloaded, {}, "driver.peermem", "ok"),
    ("k8s-pod-h100", faults.peermem_unloaded, {}, "driver.peermem", "low@container_host"),
    ("dgx-a100-mig", faults.peermem_unloaded, {}, "driver.peermem", "low@host"),
    ("k8s-pod-h100", faults.shm, {}, "container.shm", "high@container_config"),
    ("docker-h100-bm", faults.shm, {}, "container.shm", "high@container_config"),
    ("k8s-pod-h100", faults.cpu_throttled, {}, "container.cgroup_cpu", "high@container_config"),
    # no /dev/infiniband in the container: its server registers no memory with the host's NICs (third review, P1)
    ("docker-h100-bm", faults.memlock, {}, "container.memlock", "low@container_config"),
    ("docker-h100-bm", memlock_with_rdma, {}, "container.memlock", "medium@container_config"),
    ("dgx-a100-mig", faults.mig_pending, {}, "cuda.mig", "medium@host"),
    ("hgx-h100-jammy", faults.mig_unused, {}, "cuda.mig", "unknown"),
    ("hgx-h100-jammy", faults.nvlink_down, {}, "nvlink.links", "high@host"),
    ("hgx-h100-jammy", faults.link_degraded, {}, "pcie.link", "medium@host"),
    ("l40s-pex-iommu", faults.link_degraded, {}, "pcie.link", "high@host"),
    ("geforce-4x4090", faults.link_degraded, {}, "pcie.link", "high@host"),
    ("hgx-h100-jammy", faults.acs_redirect, {}, "pcie.acs", "medium@host"),
    ("hgx-h100-jammy", faults.iommu_translated, {}, "kernel.iommu", "medium@host"),
    ("intel-snc-h100pcie", faults.iommu_translated, {}, "kernel.iommu", "high@host"),
    ("geforce-4x4090", faults.iommu_translated, {}, "kernel.iommu", "low@host"),
    ("hgx-h100-jammy", faults.bar1_small, {}, "firmware.rebar", "medium@host"),
    ("aws-p5-vm", faults.bar1_small, {}, "firmware.rebar", "medium@hypervisor"),
    ("intel-snc-h100pcie", faults.bar1_small, {}, "firmware.rebar", "medium@host"),
    ("geforce-4x4090", faults.bar1_small, {}, "firmware.rebar", "low@host"),
    ("geforce-4x4090", patched_p2p_with_small_bar1, {}, "firmware.rebar", "medium@host"),
    ("gcp-g2-2xl4-vm", faults.bar1_small, {}, "firmware.rebar", "low@hypervisor"),
    ("aws-p5-vm", faults.max_read_request, {}, "pcie.mrrs", "low@hypervisor"),
    ("hgx-h100-jammy", faults.max_read_request, {}, "pcie.mrrs", "low@host"),
    ("aws-p5-vm", faults.xid, {}, "gpu.xid", "critical@hypervisor"),
    ("k8s-pod-h100", faults.xid, {}, "gpu.xid", "unknown"),
    ("hgx-h100-jammy", faults.xid, {"code": 48, "text": "pid=1, DBE"}, "gpu.xid", "critical@host"),
    ("hgx-h100-jammy", faults.xid, {"code": 13, "text": "pid=3120, Graphics Exception"}, "gpu.xid", "medium@host"),
    ("hgx-h100-jammy", faults.power_capped, {}, "power.gpu_power_limit", "medium@host"),
    ("docker-h100-bm", faults.power_capped, {}, "power.gpu_power_limit", "medium@container_host"),
    ("hgx-h100-jammy", faults.persistence_off, {}, "driver.persistence", "medium@host"),
    ("hgx-h100-jammy", faults.numa_balancing_on, {}, "numa.balancing", "medium@host"),
    ("k8s-pod-h100", faults.numa_balancing_on, {}, "numa.balancing", "medium@container_host"),
    ("hgx-h100-jammy", faults.server_env, {"NCCL_P2P_DISABLE": "1"}, "nccl.env", "high@host"),
    ("geforce-4x4090", faults.server_env, {"NCCL_P2P_DISABLE": "1"}, "nccl.env", "ok"),
    ("geforce-4x4090", faults.server_env, {"NCCL_SHM_DISABLE": "1"}, "nccl.env", "high@host"),
    ("k8s-pod-h100", faults.server_env, {"NCCL_P2P_DISABLE": "1"}, "nccl.env", "high@container_config"),
    ("hgx-h100-jammy", faults.server_env, {"CUDA_LAUNCH_BLOCKING": "1"}, "runtime.env", "medium@host"),
    ("hgx-h200-noble", faults.scaling_driver, {"driver": "acpi-cpufreq"}, "power.scaling_driver", "medium@host"),
    ("hgx-h100-jammy", faults.governor, {}, "power.governor", "low@host"),
    ("hgx-h100-jammy", faults.driver_upgraded_without_reboot, {}, "driver.library_mismatch", "high@host"),
    ("hgx-h100-jammy", faults.driver_upgraded_without_reboot, {}, "driver.fabricmanager", "critical@host"),
    ("hgx-h100-jammy", faults.no_server, {}, "power.cstates", "low@host"),
    ("epyc-nps4-l40s", faults.iommu_translated, {}, "kernel.iommu", "high@host"),
    ("epyc-nps4-l40s", faults.acs_redirect, {}, "pcie.acs", "ok"),
    ("proxmox-q35-h100pcie-vm", faults.legacy_machine_type, {}, "pcie.link", "ok"),
    ("proxmox-q35-h100pcie-vm", faults.link_degraded, {"gpu": 1}, "pcie.link", "high@hypervisor"),
    ("proxmox-q35-h100pcie-vm", faults.on_root_bus, {}, "pcie.link", "ok"),
    ("kvm-vgpu-h100-guest", faults.vgpu_unlicensed, {}, "driver.vgpu_license", "high@host"),
    ("kvm-vgpu-h100-guest", faults.server_env, {"NCCL_P2P_DISABLE": "1"}, "nccl.env", "ok"),
    ("h100nvl-bridged-pairs", faults.nvlink_bridge_unseated, {}, "nvlink.links", "high@host"),
    ("h100nvl-bridged-pairs", faults.nvlink_bridge_unseated, {}, "p2p.status", "ok"),
    ("h100nvl-bridged-pairs", faults.tp_across_pairs, {}, "p2p.status", "low@host"),
    ("h100nvl-bridged-pairs", faults.iommu_translated, {}, "kernel.iommu", "medium@host"),
    ("h100nvl-bridged-pairs", faults.server_env, {"NCCL_P2P_DISABLE": "1"}, "nccl.env", "high@host"),
    ("h100nvl-bridged-pairs", faults.bar1_small, {}, "firmware.rebar", "medium@host"),
    ("ws-rtx6000ada", faults.server_env, {"NCCL_P2P_DISABLE": "1"}, "nccl.env", "ok"),
    ("ws-rtx6000ada", faults.p2p_driver, {}, "p2p.status", "ok"),
    ("ws-rtx6000ada", faults.bar1_small, {}, "firmware.rebar", "low@host"),
    ("ws-rtx6000ada", faults.iommu_translated, {}, "kernel.iommu", "low@host"),
    ("ws-rtx6000ada", faults.link_degraded, {}, "pcie.link", "high@host"),
    ("l40s-pex-iommu", faults.no_server, {}, "pcie.acs", "medium@host"),
]


def _fault_id(case: tuple[str, Callable[..., HostSpec], dict[str, Any], str, str]) -> str:
    name, fault, kwargs, check, _ = case
    return f"{name}+{fault.__name__}{'-' + '-'.join(kwargs) if kwargs else ''}:{check}"


def assert_no_reseat_in_a_cloud(name: str, result: AuditResult) -> None:
    """On a cloud instance the hardware is the provider's: a hardware fix is a stop and start and a report naming the
    GPU by serial or UUID, never a reseat, a riser, a BIOS or a fan profile."""
    if not re.search(r"VM \(\w+, \w+\)", result.host.facts.get("platform", "")):
        return  # not a VM in a named cloud
    if True:
        for finding in result.findings:
            fix = finding.fix
            if fix is None or fix.kind != "hardware":
                continue
            words = " ".join(a.description for a in fix.actions if isinstance(a, CommandAction)).lower()
            assert "stop and start" in words and "reseat" not in words, f"{name}: {finding.check}: {words}"
            assert "uuid" in words or "serial" in words, f"{name}: {finding.check} names no GPU the provider can match"


def assert_no_firmware_setting_in_a_cloud(name: str, result: AuditResult) -> None:
    """In a named cloud the BIOS, the firmware and the PCIe registers under the GPUs are the provider's: no step tells
    the customer to change a BIOS/UEFI setting or to write a device register from the guest."""
    if not re.search(r"VM \(\w+, \w+\)", result.host.facts.get("platform", "")):
        return  # not a VM in a named cloud
    for finding in result.findings:
        fix = finding.fix
        if fix is None:
            continue
        assert not any(isinstance(a, PciRegisterAction) for a in fix.actions), f"{name}: {finding.check}: a register write"
        words = " ".join(a.description for a in fix.actions if isinstance(a, CommandAction)).lower()
        assert not re.search(r"\bbios\b|\buefi\b|setpci", words), f"{name}: {finding.check}: {words}"


def assert_no_address_of_another_layer(name: str, result: AuditResult) -> None:
    """A hypervisor is told in words (the guest's addresses and indices mean other devices there); a container's
    host is never given the container's GPU indices; a container never writes its host's sysfs or registers."""
    if True:
        platform = result.host.facts.get("platform", "")
        for finding in result.findings:
            fix = finding.fix
            if fix is None:
                continue
            where = f"{name}: {finding.check} on {fix.where}"
            if fix.where == "hypervisor":
                assert not any(isinstance(a, (PciRegisterAction, SysfsWriteAction)) for a in fix.actions), where
                assert all(not a.argv for a in fix.actions if isinstance(a, CommandAction) and "-i" in a.argv), where
            if fix.where == "container_host":
                for action in fix.actions:
                    if isinstance(action, CommandAction) and "-i" in action.argv:
                        arg = action.argv[action.argv.index("-i") + 1]
                        assert not arg.isdigit(), f"{where}: a GPU index of the container ({arg})"
            if "container" in platform:
                assert fix.where != "host", f"{where}: inside a container nothing is 'this host'"
                if "VM" not in platform:
                    assert fix.where != "hypervisor", f"{where}: a container host on bare metal is no hypervisor"


SLICES = 8
"""The cases are dealt into this many test files (tests/test_archetype_slice_N.py): one file runs on one worker, and
no file takes more than about 15 s."""


def cases_of(piece: int) -> tuple[list[str], list[tuple[str, Callable[..., HostSpec], dict[str, Any], str, str]]]:
    """The archetypes and the faults of slice ``piece`` (1 to SLICES), dealt round-robin."""
    names = sorted(ARCHETYPES)[piece - 1 :: SLICES]
    return names, FAULTS[piece - 1 :: SLICES]


def slice_tests(piece: int) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None]]:
    """The verdict tests of one slice: every archetype's verdicts, every fault's verdict, and on each of their
    results the rules that hold on any host (no reseat in a cloud, no address of another layer)."""
    names, faults_here = cases_of(piece)

    @pytest.mark.parametrize("name", names)
    def test_archetype_verdicts(name: str) -> None:
        result = audited(ARCHETYPES[name])
        got = {f.check: verdict(f) for f in result.findings}
        want = {c: EXPECTED[name].get(c, "ok") for c in got}
        assert {c: v for c, v in got.items() if v != want[c]} == {}, (
            f"expected {dict((c, want[c]) for c in got if got[c] != want[c])}"
        )

    @pytest.mark.parametrize("case", faults_here, ids=[_fault_id(c) for c in faults_here])
    def test_fault_verdicts(case: tuple[str, Callable[..., HostSpec], dict[str, Any], str, str]) -> None:
        name, fault, kwargs, check, want = case
        result = audited(fault(ARCHETYPES[name], **kwargs))
        finding = next(f for f in result.findings if f.check == check)
        assert verdict(finding) == want, finding.observed

    specs = [ARCHETYPES[n] for n in names] + [f(ARCHETYPES[n], **kw) for n, f, kw, _, _ in faults_here]

    @pytest.mark.parametrize("spec", list(dict.fromkeys(specs)), ids=lambda s: s.name)
    def test_every_fix_holds_on_its_layer(spec: HostSpec) -> None:
        result = audited(spec)
        assert_no_reseat_in_a_cloud(spec.name, result)
        assert_no_firmware_setting_in_a_cloud(spec.name, result)
        assert_no_address_of_another_layer(spec.name, result)

    return test_archetype_verdicts, test_fault_verdicts, test_every_fix_holds_on_its_layer
