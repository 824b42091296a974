"""RDMA NICs: /sys/class/infiniband (ConnectX mlx5, AWS EFA), /dev/infiniband, ibstat and ibv_devinfo, MLNX_OFED."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostgen.pci import Function, rel

if TYPE_CHECKING:
    from tests.hostgen.build import Built

RATES = {400: "400 Gb/sec (4X NDR)", 200: "200 Gb/sec (4X HDR)", 100: "100 Gb/sec (4X EDR)"}


def ib_name(kind: str, index: int, function: Function, *, cloud: str | None = None) -> str:
    if cloud == "azure":
        # Azure's HPC images name the InfiniBand VFs mlx5_ib0.. (ND-series job scripts: UCX_NET_DEVICES=mlx5_ib0:1)
        return f"mlx5_ib{index}"
    if kind == "efa":
        # rdma-core names EFA devices by PCI address: rdmap<bus>s<slot>, in decimal (rdmap115s0)
        bus, slot = function.bdf.split(":")[1], function.bdf.split(":")[2].split(".")[0]
        return f"rdmap{int(bus, 16)}s{int(slot, 16)}"
    return f"mlx5_{index}"


def write_rdma(built: Built) -> None:
    spec, tree = built.spec, built.tree
    nic = spec.nics
    if nic is None or not built.placed.nics:
        tree.missing_program("ibstat", "ibv_devinfo", "ofed_info")
        return
    efa = nic.kind == "efa"
    hca = "" if efa else f"MT{built.placed.nics[0].device}"  # ibstat's CA type: MT and the PCI device id in decimal
    fw = {"cx7": "28.39.1002", "cx6": "20.39.1002", "efa": "0.0.0.0"}.get(nic.kind, "28.39.1002")
    link_layer = "Unknown" if efa else nic.link_layer  # the efa driver reports no link layer
    for index, function in enumerate(built.placed.nics):
        name = built.rdma_names[index]
        folder = f"{function.path}/infiniband/{name}"
        guid = f"a088:c203:00{index:02x}:{0x3C + index:04x}"
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
                "cap_mask": "0xa751e848",
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
            "\t\tCapability mask: 0xa751e848",
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
