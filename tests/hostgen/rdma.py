"""RDMA NICs: /sys/class/infiniband (ConnectX mlx5, AWS EFA), /dev/infiniband, ibstat and ibv_devinfo, MLNX_OFED;
and the NVLink management ports of an NVLink 5 baseboard, which the host lists among them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostgen.pci import Function, rel
from tests.hostgen.spec import NicSpec

if TYPE_CHECKING:
    from tests.hostgen.build import Built

RATES = {400: "400 Gb/sec (4X NDR)", 200: "200 Gb/sec (4X HDR)", 100: "100 Gb/sec (4X EDR)"}
CAP_MASK = 0xA751E848
IS_SM_DISABLED = 0x400
"""The port capability bit NVIDIA's start script (and siderolabs' wrapper, extensions PR 895) skips a management port
by."""
MANAGEMENT_NIC = NicSpec("cx7", 0, ofed=None)
"""The ConnectX-7 bridge's ports as a NIC kind where the host has no data NIC (its link rate is not shown by a public
source read here: NDR's stands in)."""


def node_guid(index: int) -> str:
    """The ``index``-th RDMA device's node GUID as sysfs writes it (``a088:c203:0000:003c``); port 1's is the same."""
    return f"a088:c203:00{index:02x}:{0x3C + index:04x}"


def start_script_lines(built: Built) -> list[tuple[str, str]]:
    """What nvidia-fabricmanager-start.sh logs on an NVLink 5 system as it finds the management port it hands NVLSM
    and the fabric manager (spectrocloud/CanvOS PR 700, HGX B200): the first eligible port in name order. The journal
    prefix (the script's name and pid) is not shown there and stands in."""
    names = [n for n, f in zip(built.rdma_names, built.placed.nics, strict=True) if any(f is m for m in built.placed.management)]
    eligible = [n for n in sorted(names) if not _cap_mask(built, built.placed.nics[built.rdma_names.index(n)]) & IS_SM_DISABLED]
    if not eligible:
        return []
    port = "0x" + node_guid(built.rdma_names.index(eligible[0])).replace(":", "")
    script = "nvidia-fabricmanager-start.sh[2310]"
    return [
        (script, "Polling for at least one Infiniband device before starting Fabric Manager..."),
        (script, f"Checking {eligible[0]}..."),
        (script, f"Using device {eligible[0]}, port {port}"),
        (script, "Detected NVL5+ system"),
    ]


NVLSM = "/opt/nvidia/nvlsm/sbin/nvlsm"
NVLSM_CONF = "/usr/share/nvidia/nvlsm/nvlsm.conf"
NVLSM_LOG = "/var/log/nvlsm.log"
NVLSM_PID = "/var/run/nvlsm.pid"
NVLSM_PROC = 1738
"""NVLSM as nvidia-fabricmanager-start.sh runs it: its binary, configuration (log_file = /var/log/nvlsm.log) and pid
file (github.com/siderolabs/extensions/issues/893 shows the command line and the option; the script's own run of it
gives the log file of its configuration rather than stdout)."""


def nvlsm_argv(built: Built) -> tuple[str, ...]:
    return (NVLSM, "--config", NVLSM_CONF, "--guid", management_port(built) or "0x0", "--pid_file", NVLSM_PID)


def management_port(built: Built) -> str | None:
    """The GUID of the port the start script hands NVLSM (the first eligible management port in name order)."""
    lines = start_script_lines(built)
    return lines[2][1].rsplit(" ", 1)[-1] if lines else None


def nvlsm_log(built: Built) -> list[str]:
    """NVLSM's log (OpenSM's format: date, usec, thread, level -> function: message) up to the subnet coming up;
    the words are OpenSM's (linux-rdma/opensm, osm_vendor_ibumad.c 'Binding to port'), the times stand in."""
    port = management_port(built) or "0x0"
    return [
        "Nov 30 09:58:11 498213 [7F1C2E9FF640] 0x03 -> OpenSM 2025.06.5_eb3b4ba_df9bb3c_ae214d2",
        f"Nov 30 09:58:11 498890 [7F1C2E9FF640] 0x02 -> osm_vendor_bind: Binding to port {port}",
        "Nov 30 09:58:12 103114 [7F1C2BFFF640] 0x02 -> SUBNET UP",
    ]


def vpd(index: int, management: bool) -> bytes:
    """The PCI VPD of a ConnectX function: identifier string, then the read-only keywords. The bridge's functions carry
    the vendor-specific field SMDL=SW_MNG (NVIDIA Fabric Manager user guide, release 2.3, HGX B200 baseboard; the
    string siderolabs' wrapper looks for); the part numbers are of NVIDIA's form, not read off a board."""
    ident = b"NVIDIA ConnectX-7" if management else b"NVIDIA ConnectX-7 HHHL adapter card, 400GbE / NDR IB"
    serial = f"MT2412X{index:05d}".encode()
    fields = [(b"PN", b"MCX75310AAS-NEAT"), (b"EC", b"AA"), (b"SN", serial)]
    if management:
        fields.append((b"V3", b"SMDL=SW_MNG"))
    body = b"".join(key + bytes([len(value)]) + value for key, value in fields) + b"RV\x01\x00"
    return b"\x82" + len(ident).to_bytes(2, "little") + ident + b"\x90" + len(body).to_bytes(2, "little") + body + b"\x78"


def ib_name(kind: str, index: int, function: Function, *, cloud: str | None = None, by_pci: bool = False) -> str:
    if cloud == "azure":
        # Azure's HPC images name the InfiniBand VFs mlx5_ib0.. (ND-series job scripts: UCX_NET_DEVICES=mlx5_ib0:1)
        return f"mlx5_ib{index}"
    if kind == "efa":
        # rdma-core names EFA devices by PCI address: rdmap<bus>s<slot>, in decimal (rdmap115s0)
        bus, slot = function.bdf.split(":")[1], function.bdf.split(":")[2].split(".")[0]
        return f"rdmap{int(bus, 16)}s{int(slot, 16)}"
    if by_pci and kind != "efa":
        # rdma-core's persistent naming (NAME_PCI): roce + P<domain> when not 0 + p<bus>s<slot>f<function>, in
        # decimal: DGX OS names a Spark's ConnectX-7 rocep1s0f0, rocep1s0f1, roceP2p1s0f0, roceP2p1s0f1 (NCCL's
        # NET/IB lines in NVIDIA's forum thread "Enabling GPU Direct RDMA for DGX Spark Clustering")
        domain, bus, rest = function.bdf.split(":") if function.bdf.count(":") == 2 else ("0000", *function.bdf.split(":"))
        slot, fn = rest.split(".")
        prefix = f"P{int(domain, 16)}" if int(domain, 16) else ""
        return f"roce{prefix}p{int(bus, 16)}s{int(slot, 16)}f{int(fn, 16)}"
    return f"mlx5_{index}"


def write_rdma(built: Built) -> None:
    spec, tree = built.spec, built.tree
    nic = spec.nics or (MANAGEMENT_NIC if built.placed.management else None)
    if nic is None or not built.placed.nics:
        tree.missing_program("ibstat", "ibv_devinfo", "ofed_info")
        return
    efa = nic.kind == "efa"
    hca = "" if efa else f"MT{built.placed.nics[0].device}"  # ibstat's CA type: MT and the PCI device id in decimal
    fw = {"cx7": "28.39.1002", "cx6": "20.39.1002", "efa": "0.0.0.0"}.get(nic.kind, "28.39.1002")
    link_layer = "Unknown" if efa else nic.link_layer  # the efa driver reports no link layer
    for index, function in enumerate(built.placed.nics):
        name = built.rdma_names[index]
        management = any(function is m for m in built.placed.management)
        folder = f"{function.path}/infiniband/{name}"
        if nic.kind != "efa":
            tree.file(f"{function.path}/vpd", vpd(index, management))
        guid = node_guid(index)
        tree.attrs(
            folder,
            {
                "node_type": "1: CA",
                "node_guid": guid,
                "sys_image_guid": guid,
                "fw_ver": fw,
                "hca_type": hca,
                "board_id": "MT_0000000838" if nic.kind == "cx7" else "MT_0000000223" if nic.kind == "cx6" else "",
                "node_desc": f"{tree.hostname} {name}",
            },
        )
        port = f"{folder}/ports/1"
        tree.attrs(
            port,
            {
                "state": "4: ACTIVE",
                "phys_state": "5: LinkUp",
                "rate": RATES.get(nic.rate_gbps, f"{nic.rate_gbps} Gb/sec"),
                "link_layer": link_layer,
                "lid": f"0x{index + 1:x}" if nic.link_layer == "InfiniBand" else "0x0",
                "sm_lid": "0x1",
                "lid_mask_count": 0,
                "cap_mask": f"0x{_cap_mask(built, function):08x}",
            },
        )
        tree.file(f"{port}/gids/0", "fe80:0000:0000:0000:" + guid + "\n")
        tree.link(f"{folder}/device", rel(folder, function.path))
        tree.link(f"/sys/class/infiniband/{name}", rel("/sys/class/infiniband", folder))
        uverbs = f"{function.path}/infiniband_verbs/uverbs{index}"
        tree.attrs(uverbs, {"ibdev": name, "abi_version": 1, "dev": f"231:{192 + index}"})
        tree.link(f"/sys/class/infiniband_verbs/uverbs{index}", rel("/sys/class/infiniband_verbs", uverbs))
    tree.attrs("/sys/class/infiniband_verbs", {"abi_version": 6})
    if nic.ofed:
        tree.command(("ofed_info", "-s"), f"{nic.ofed}:\n")
    else:
        tree.missing_program("ofed_info")
    lines = []
    for index, name in enumerate(built.rdma_names):
        lines += [
            f"CA '{name}'",
            f"\tCA type: {hca}",
            "\tNumber of ports: 1",
            f"\tFirmware version: {fw}",
            "\tHardware version: 0",
            f"\tNode GUID: 0x{built.tree.text(f'/sys/class/infiniband/{name}/node_guid') or ''}",
            "\tPort 1:",
            "\t\tState: Active",
            "\t\tPhysical state: LinkUp",
            f"\t\tRate: {nic.rate_gbps}",
            f"\t\tBase lid: {index + 1}",
            "\t\tSM lid: 1",
            f"\t\tCapability mask: 0x{_cap_mask(built, built.placed.nics[index]):08x}",
            f"\t\tLink layer: {link_layer}",
        ]
    tree.command(("ibstat",), "\n".join(lines) + "\n")
    info = []
    for index, name in enumerate(built.rdma_names):
        info += [
            f"hca_id:\t{name}",
            "\ttransport:\t\t\tunspecified (4)" if efa else "\ttransport:\t\t\tInfiniBand (0)",
            f"\tfw_ver:\t\t\t\t{fw}",
            f"\tvendor_id:\t\t\t0x{built.placed.nics[index].vendor:04x}",
            f"\tvendor_part_id:\t\t\t{built.placed.nics[index].device}",
            "\tphys_port_cnt:\t\t\t1",
            "\t\tport:\t1",
            "\t\t\tstate:\t\t\tPORT_ACTIVE (4)",
            "\t\t\tmax_mtu:\t\t4096 (5)",
            "\t\t\tactive_mtu:\t\t4096 (5)",
            f"\t\t\tlink_layer:\t\t{'InfiniBand' if efa else nic.link_layer}",
            "",
        ]
    tree.command(("ibv_devinfo",), "\n".join(info))


def _cap_mask(built: Built, function: Function) -> int:
    """The bridge's first two functions (its full PFs) with IsSMDisabled, the limited PFs without: which of the four
    carries it is not shown by a public source read here; NVIDIA's start script picks the first eligible in name
    order, mlx5_10 on HGX B200 (spectrocloud/CanvOS PR 700: 'Checking mlx5_10... Using device mlx5_10')."""
    if any(function is m for m in built.placed.management[:2]):
        return CAP_MASK | IS_SM_DISABLED
    return CAP_MASK
