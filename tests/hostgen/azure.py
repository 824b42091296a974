"""Azure's HPC image files on an ND-class guest: the size's NCCL topology file, as Azure/azhpc-images ships it
(``topology/ndv5-topo.xml``: one ``<cpu>`` per NUMA node, under it one stand-in bridge per GPU holding the GPU and
the InfiniBand VF beside it), linked as ``/opt/microsoft/<stem>/topo.xml``, and ``/etc/nccl.conf`` naming it
(``customizations/ndv5.sh``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostgen.cpu import node_cpumask

if TYPE_CHECKING:
    from tests.hostgen.build import Built

SPEED = "32.0 GT/s PCIe"


def nccl_conf(stem: str) -> str:
    """/etc/nccl.conf as Azure's HPC image writes it for the size."""
    return f"NCCL_IB_PCI_RELAXED_ORDERING=1\nNCCL_TOPO_FILE=/opt/microsoft/{stem}/topo.xml\nNCCL_IGNORE_CPU_AFFINITY=1\n"


def topo_xml(built: Built) -> str:
    """The topology file of the guest's layout: GPU k and NIC k under the k-th bridge, bridges under their NUMA node."""
    spec, nics = built.spec, built.placed.nics
    lines = ['<system version="1">']
    by_node: dict[int, list[int]] = {}
    for k, gpu in enumerate(built.placed.gpus):
        by_node.setdefault(max(gpu.numa_node, 0), []).append(k)
    for node, members in sorted(by_node.items()):
        lines.append(
            f'  <cpu numaid="{node}" affinity="{node_cpumask(spec.cpu, node)}" arch="x86_64" vendor="GenuineIntel" '
            f'familyid="{spec.cpu.family}" modelid="{spec.cpu.model}">'
        )
        for k in members:
            lines.append(
                f'    <pci busid="ffff:ff:{k + 1:02x}.0" class="0x060400" link_speed="{SPEED}" link_width="16" '
                'vendor="0x0000" device="0x0000" subsystem_vendor="0x0000" subsystem_device="0x0000">'
            )
            lines.append(f'      <pci busid="{built.placed.gpus[k].bdf}" class="0x030200" link_speed="{SPEED}" link_width="16"/>')
            if k < len(nics):
                lines.append(f'      <pci busid="{nics[k].bdf}" class="0x020700" link_speed="{SPEED}" link_width="16"/>')
            lines.append("    </pci>")
        lines.append("  </cpu>")
    return "\n".join([*lines, "</system>"]) + "\n"


def write_topology_file(built: Built, stem: str) -> None:
    """``/opt/microsoft/<stem>-topo.xml`` and its ``/opt/microsoft/<stem>/topo.xml`` link."""
    built.tree.file(f"/opt/microsoft/{stem}-topo.xml", topo_xml(built))
    built.tree.link(f"/opt/microsoft/{stem}/topo.xml", f"/opt/microsoft/{stem}-topo.xml")  # ln -sf, as ndv5.sh
