"""runtime: CUDA runtime vs driver, device order, open-file and process limits of the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigaudit.agents.facts.proc_info import Limit, parse_limits, status_uid
from rigaudit.agents.investigators.runtime import INVESTIGATOR
from rigaudit.agents.investigators.runtime.cuda import driver_cuda
from rigaudit.tools.schema.finding import Finding
from tests.support.investigators import audit_snapshot
from tests.support.mutate import add_process, light_copy, set_file, set_link, set_nvml

SITE = "/opt/venv/lib/python3.12/site-packages"
MAPS = f"7f2a1c000000-7f2a1e000000 r-xp 00000000 00:2f 1234 {SITE}/torch/lib/libtorch_cuda.so\n"


def limits(nofile: tuple[str, str] = ("1048576", "1048576"), nproc: tuple[str, str] = ("unlimited", "unlimited")) -> str:
    return (
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max cpu time              unlimited            unlimited            seconds   \n"
        f"Max processes             {nproc[0]:<20} {nproc[1]:<20} processes \n"
        f"Max open files            {nofile[0]:<20} {nofile[1]:<20} files     \n"
        "Max locked memory         unlimited            unlimited            bytes     \n"
    )


def status(uid: int, threads: int) -> str:
    return f"Name:\tpython3\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nThreads:\t{threads}\n"


@pytest.fixture
def snap(seed_dir: Path, tmp_path: Path) -> Path:
    return light_copy(seed_dir, tmp_path / "snap")


def audit(root: Path) -> dict[str, Finding]:
    return audit_snapshot(INVESTIGATOR, root, evidence_read=True)


def server(
    root: Path,
    *,
    cuda: str | None = "12.8",
    env: dict[str, str] | None = None,
    limit_text: str | None = None,
    uid: int = 1000,
    threads: int = 300,
) -> None:
    """A vLLM server in LXC 101 seen from the host; torch found through its maps."""
    set_link(root, "/proc/self/ns/mnt", "mnt:[4026531841]")
    add_process(
        root,
        5000,
        ["/opt/venv/bin/python3", "-m", "vllm.entrypoints.openai.api_server"],
        cgroup="0::/lxc/101/ns/init.scope\n",
        mnt_ns="mnt:[4026532999]",
        environ=env if env is not None else {"PATH": "/usr/bin"},
        files={"maps": MAPS, "limits": limit_text or limits(), "status": status(uid, threads)},
    )
    cuda_text = f"'{cuda}'" if cuda else "None"
    set_file(root, f"/proc/5000/root{SITE}/torch/version.py", f"__version__ = '2.8.0'\ncuda: Optional[str] = {cuda_text}\n")


def test_helpers() -> None:
    parsed = parse_limits(limits(("1024", "4096")))
    assert parsed["Max open files"] == Limit(1024, 4096)
    assert parsed["Max processes"] == Limit(None, None)
    assert status_uid(status(1000, 5)) == 1000
    assert driver_cuda(13000) == (13, 0) and driver_cuda(12080) == (12, 8) and driver_cuda("x") is None


def test_seed(seed_dir: Path) -> None:
    found = audit(seed_dir)
    assert found["runtime.cuda_driver_compat"].status == "unknown"
    assert "LXC container 101" in found["runtime.cuda_driver_compat"].observed
    order = found["runtime.device_order"]
    assert order.status == "ok"
    assert order.observed == "8 × NVIDIA RTX PRO 6000 Blackwell Server Edition in PCI bus order (NVML index = PCI order)"
    assert found["runtime.nofile"].status == "unknown"
    assert found["runtime.nproc"].status == "unknown"


def test_runtime_of_a_newer_major_than_the_driver_is_high(snap: Path) -> None:
    server(snap, cuda="13.0")
    set_nvml(snap, "nvmlSystemGetCudaDriverVersion", [], 12080)
    finding = audit(snap)["runtime.cuda_driver_compat"]
    assert (finding.status, finding.severity) == ("problem", "high")
    assert "the driver supports CUDA up to 12.8" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "reboot" and finding.fix.where == "host"


def test_runtime_of_a_newer_minor_is_low(snap: Path) -> None:
    server(snap, cuda="12.9")
    set_nvml(snap, "nvmlSystemGetCudaDriverVersion", [], 12080)
    assert audit(snap)["runtime.cuda_driver_compat"].severity == "low"


def test_runtime_the_driver_supports_is_ok(snap: Path) -> None:
    server(snap, cuda="12.8")
    finding = audit(snap)["runtime.cuda_driver_compat"]
    assert finding.status == "ok" and "the driver supports CUDA up to 13.0" in finding.observed


def test_cpu_only_torch_is_not_applicable(snap: Path) -> None:
    server(snap, cuda=None)
    assert audit(snap)["runtime.cuda_driver_compat"].status == "not_applicable"


def mixed_models(root: Path) -> None:
    set_nvml(root, "nvmlDeviceGetName", [7], "NVIDIA RTX PRO 4000 Blackwell")


def test_mixed_models_without_pci_bus_order_is_medium(snap: Path) -> None:
    mixed_models(snap)
    server(snap, env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    finding = audit(snap)["runtime.device_order"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "CUDA_DEVICE_ORDER unset (FASTEST_FIRST), CUDA_VISIBLE_DEVICES=0,1,2,3" in finding.observed
    assert finding.fix is not None and (finding.fix.kind, finding.fix.where) == ("restart", "container")


def test_mixed_models_with_pci_bus_order_is_ok(snap: Path) -> None:
    mixed_models(snap)
    server(snap, env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert audit(snap)["runtime.device_order"].status == "ok"


def test_mixed_models_without_a_server_is_unknown(snap: Path) -> None:
    mixed_models(snap)
    finding = audit(snap)["runtime.device_order"]
    assert finding.status == "unknown" and "no inference server process found" in finding.observed


@pytest.mark.parametrize(("nofile", "severity"), [(("1024", "4096"), "medium"), (("8192", "1048576"), "low")])
def test_low_open_file_limit(snap: Path, nofile: tuple[str, str], severity: str) -> None:
    server(snap, limit_text=limits(nofile))
    finding = audit(snap)["runtime.nofile"]
    assert (finding.status, finding.severity) == ("problem", severity)
    assert f"soft {nofile[0]}, hard {nofile[1]}" in finding.observed
    assert finding.fix is not None and finding.fix.kind == "restart"


def test_high_open_file_limit_is_ok(snap: Path) -> None:
    server(snap)
    finding = audit(snap)["runtime.nofile"]
    assert finding.status == "ok" and finding.observed.startswith("soft 1048576, hard 1048576")


def test_process_limit_near_the_threads_in_use_is_medium(snap: Path) -> None:
    server(snap, limit_text=limits(nproc=("4096", "4096")), threads=3500)
    finding = audit(snap)["runtime.nproc"]
    assert (finding.status, finding.severity) == ("problem", "medium")
    assert "Max processes soft 4096, 3500 threads of uid 1000" in finding.observed


def test_process_limit_does_not_bind_root(snap: Path) -> None:
    server(snap, limit_text=limits(nproc=("1024", "1024")), uid=0, threads=900)
    finding = audit(snap)["runtime.nproc"]
    assert finding.status == "ok" and "root" in finding.observed
