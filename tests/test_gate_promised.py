"""``promised.*``: the gate knows what the node should have without an --expect file (Slurm's GRES, the Kubernetes
node object's nvidia.com/gpu capacity, the PCI bus against NVML, a GPU NVML lists but cannot query); an unknown
that hides the GPUs is "could not check"."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main
from rigaudit.orchestrator.gate.slurm_gres import expand_hostlist, read_slurm_gres
from rigaudit.tools.schema.check import CheckResult
from tests.support.mutate import light_copy, remove_tree, set_file, set_nvml

H200 = Path(__file__).parent / "fixtures" / "h200x2-vm"


def check(tmp_path: Path, root: Path, *extra: str) -> CheckResult:
    out = tmp_path / "result.json"
    main(["check", "--snapshot", str(root), "--only", "promised", "--json", str(out), "-q", *extra])
    return CheckResult.model_validate_json(out.read_text())


def status(result: CheckResult, check_id: str) -> str:
    return next(c.status for c in result.checks if c.check == check_id)


def node_object(gpus: str) -> dict[str, object]:
    return {"kind": "Node", "metadata": {"name": "gpu-7"}, "status": {"capacity": {"nvidia.com/gpu": gpus}}}


@contextlib.contextmanager
def api_server(body: dict[str, object]) -> Iterator[str]:
    """A fake API server on loopback answering GET /api/v1/nodes/gpu-7 with ``body``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/api/v1/nodes/gpu-7"
            data = json.dumps(body if found else {"kind": "Status", "code": 404}).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v1/nodes/gpu-7"
    finally:
        server.shutdown()
        server.server_close()


def test_a_node_short_of_its_kubernetes_capacity_is_a_critical_problem(tmp_path: Path) -> None:
    with api_server(node_object("4")) as url:
        result = check(tmp_path, H200, "--kube-node", url)
    assert result.exit_code == 1
    assert result.reason.startswith("promised.kubernetes critical: 2 of the 4 nvidia.com/gpu node gpu-7 advertises missing")
    recorded = tmp_path / "node.json"
    recorded.write_text(json.dumps(node_object("2")))
    assert check(tmp_path, H200, "--kube-node", str(recorded)).exit_code == 0


def test_an_unreadable_node_object_is_could_not_check(tmp_path: Path) -> None:
    with api_server(node_object("2")) as url:
        result = check(tmp_path, H200, "--kube-node", url.replace("gpu-7", "gpu-8"))
    assert (result.exit_code, status(result, "promised.kubernetes")) == (3, "unknown")
    assert "HTTP Error 404" in result.reason


def test_gres_promise_from_slurm_conf_or_gres_conf(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=DEFAULT Gres=gpu:h100:4\nNodeName=gpu[01-03,07] CPUs=8\nNodeName=cpu1 CPUs=2\n")
    promise = read_slurm_gres(conf, "gpu07").promise
    assert promise is not None and (promise.count, promise.type) == (4, "h100")
    assert read_slurm_gres(conf, "cpu2").promise is None
    conf.write_text("NodeName=gpu01 CPUs=8\n")
    (tmp_path / "gres.conf").write_text("NodeName=gpu0[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-7]\nName=shard Count=8\n")
    promise = read_slurm_gres(conf, "gpu01").promise
    assert promise is not None and (promise.count, promise.type) == (8, "a100")
    assert expand_hostlist("n[1-2]x[08-09],m") == ["n1x08", "n1x09", "n2x08", "n2x09", "m"]
    with pytest.raises(ValueError, match="too long"):
        expand_hostlist("n[0-99999999]")


def test_a_gpu_off_nvml_and_a_lost_gpu_are_critical(tmp_path: Path) -> None:
    assert check(tmp_path, H200).exit_code == 0
    off = light_copy(H200, tmp_path / "off")
    set_nvml(off, "nvmlDeviceGetCount", [], 1)
    result = check(tmp_path, off)
    assert result.exit_code == 1 and result.reason.startswith("promised.pci critical: NVML shows 1 of the 2 NVIDIA GPU")
    lost = light_copy(H200, tmp_path / "lost")
    set_nvml(lost, "nvmlDeviceGetUUID", [1], error="GPU_IS_LOST")
    result = check(tmp_path, lost)
    assert result.exit_code == 1 and "GPU1 (GPU_IS_LOST)" in result.reason


def test_nvml_that_hides_the_gpus_is_could_not_check(tmp_path: Path) -> None:
    hidden = light_copy(H200, tmp_path / "hidden")
    set_nvml(hidden, "nvmlInit", [], error="NO_PERMISSION")
    result = check(tmp_path, hidden)
    assert (result.exit_code, status(result, "promised.pci")) == (3, "unknown")
    broken = light_copy(H200, tmp_path / "broken")
    set_nvml(broken, "nvmlInit", [], error="DRIVER_NOT_LOADED")
    assert check(tmp_path, broken).exit_code == 1


def test_a_gpu_operator_node_whose_library_is_in_the_driver_container_is_could_not_check(tmp_path: Path) -> None:
    # NVML's library is the GPU Operator's, under /run/nvidia/driver: not "0 GPUs", which would drain a healthy node
    node = light_copy(H200, tmp_path / "operator")
    set_nvml(node, "nvmlInit", [], error="LIBRARY_NOT_FOUND")
    assert check(tmp_path, node).exit_code == 1  # no Operator root: the host's own library is missing
    set_file(node, "/run/nvidia/driver/usr/bin/nvidia-smi", b"\x7fELF")
    result = check(tmp_path, node)
    assert (result.exit_code, status(result, "promised.pci")) == (3, "unknown")
    assert "/run/nvidia/driver" in next(c.observed for c in result.checks if c.check == "promised.pci")


def test_in_cluster_names_the_pods_node_on_its_api_server() -> None:
    from rigaudit.orchestrator.gate.kube_node import in_cluster_url, load

    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "NODE_NAME": "gpu-7"}
    assert in_cluster_url(env) == "https://10.96.0.1:443/api/v1/nodes/gpu-7"
    assert in_cluster_url({**env, "KUBERNETES_SERVICE_HOST": "fd00::1"}) == "https://[fd00::1]:443/api/v1/nodes/gpu-7"
    error = load("in-cluster", {"NODE_NAME": "gpu-7"}).error
    assert error is not None and "KUBERNETES_SERVICE_HOST" in error


def test_the_schedulers_settings_are_read_only_for_the_promised_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rigaudit.orchestrator.gate import slurm_gres

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("read Slurm's configuration")

    monkeypatch.setattr(slurm_gres, "load", refuse)
    assert main(["check", "--snapshot", str(H200), "--only", "pcie", "-q"]) == 0
    assert main(["check", "--snapshot", str(H200), "--only", "promised", "-q"]) == 4  # read, and refused here


def test_a_node_without_gpus_is_never_called_healthy_in_words_that_hide_it(tmp_path: Path) -> None:
    """A node with no NVIDIA GPU and no promise of one may pass, but its line says that no GPU was judged."""
    assert "no NVIDIA GPU" not in check(tmp_path, H200).reason
    bare = light_copy(H200, tmp_path / "bare")
    set_nvml(bare, "nvmlInit", [], error="LIBRARY_NOT_FOUND")
    remove_tree(bare, "/sys/module/nvidia")
    for bdf in ("0000:00:06.0", "0000:00:07.0"):  # the two H200s become another vendor's functions
        set_file(bare, f"/sys/devices/pci0000:00/{bdf}/vendor", "0x1af4\n")
    result = check(tmp_path, bare)
    assert result.exit_code == 0
    assert result.reason.startswith(
        "healthy: no NVIDIA GPU on this node and none promised (promised.slurm, promised.kubernetes read)"
    )
