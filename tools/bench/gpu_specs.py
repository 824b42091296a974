"""Peak memory bandwidth of GPUs, by the name NVML reports (``nvmlDeviceGetName``), from the vendors' data sheets.

The lookup is exact: a name is normalized (case, spaces, dashes and the ``NVIDIA``/``Tesla``/``GeForce``
prefix do not matter) and must then equal a table name or one of its listed aliases. Nothing is
matched by substring: "NVIDIA A100-SXM4-80GB" is the A100 SXM4 80GB (2,039 GB/s), never the A10
(600 GB/s) whose name it contains, and an ambiguous short name ("A100", "H100") is refused with the
names it could mean (:func:`candidates`), because their bandwidths differ by up to 2x.
"""

from __future__ import annotations

import re

from rigaudit.tools.core.record import Record


class GpuSpec(Record):
    name: str
    """As NVML reports it (``NVIDIA H200``)."""
    bandwidth_gbs: float
    """Peak memory bandwidth, GB/s (10^9 bytes per second), per the data sheet."""
    memory: str
    """Memory type and size (``141 GB HBM3e``)."""
    aliases: tuple[str, ...] = ()
    """Short names people type (``H200``, ``H100 SXM``); each names only this GPU."""


SPECS: tuple[GpuSpec, ...] = (
    # Blackwell
    GpuSpec("NVIDIA B200", 8000.0, "180 GB HBM3e", ("B200",)),
    GpuSpec("NVIDIA B300 SXM6 AC", 8000.0, "288 GB HBM3e", ("B300",)),
    GpuSpec("NVIDIA GB200", 8000.0, "186 GB HBM3e", ("GB200",)),
    GpuSpec("NVIDIA RTX PRO 6000 Blackwell Server Edition", 1792.0, "96 GB GDDR7", ("RTX PRO 6000", "RTX PRO 6000 Blackwell")),
    GpuSpec("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 1792.0, "96 GB GDDR7"),
    GpuSpec("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 1792.0, "96 GB GDDR7"),
    GpuSpec("NVIDIA GeForce RTX 5090", 1792.0, "32 GB GDDR7", ("RTX 5090",)),
    GpuSpec("NVIDIA GeForce RTX 5080", 960.0, "16 GB GDDR7", ("RTX 5080",)),
    # Hopper
    GpuSpec("NVIDIA H200", 4800.0, "141 GB HBM3e", ("H200", "H200 SXM")),
    GpuSpec("NVIDIA H200 NVL", 4800.0, "141 GB HBM3e"),
    GpuSpec("NVIDIA H100 80GB HBM3", 3350.0, "80 GB HBM3", ("H100 SXM", "H100 SXM5")),
    GpuSpec("NVIDIA H100 PCIe", 2000.0, "80 GB HBM2e"),
    GpuSpec("NVIDIA H100 NVL", 3900.0, "94 GB HBM3"),
    GpuSpec("NVIDIA H800", 3350.0, "80 GB HBM3", ("H800 SXM",)),
    GpuSpec("NVIDIA H800 PCIe", 2000.0, "80 GB HBM2e"),
    GpuSpec("NVIDIA H20", 4000.0, "96 GB HBM3"),
    GpuSpec("NVIDIA GH200 480GB", 4000.0, "96 GB HBM3", ("GH200",)),
    GpuSpec("NVIDIA GH200 144G HBM3e", 4900.0, "144 GB HBM3e"),
    # Ada Lovelace
    GpuSpec("NVIDIA L40S", 864.0, "48 GB GDDR6"),
    GpuSpec("NVIDIA L40", 864.0, "48 GB GDDR6"),
    GpuSpec("NVIDIA L20", 864.0, "48 GB GDDR6"),
    GpuSpec("NVIDIA L4", 300.0, "24 GB GDDR6"),
    GpuSpec("NVIDIA RTX 6000 Ada Generation", 960.0, "48 GB GDDR6", ("RTX 6000 Ada",)),
    GpuSpec("NVIDIA RTX 5000 Ada Generation", 576.0, "32 GB GDDR6", ("RTX 5000 Ada",)),
    GpuSpec("NVIDIA GeForce RTX 4090", 1008.0, "24 GB GDDR6X", ("RTX 4090",)),
    GpuSpec("NVIDIA GeForce RTX 4080", 716.8, "16 GB GDDR6X", ("RTX 4080",)),
    # Ampere
    GpuSpec("NVIDIA A100-SXM4-80GB", 2039.0, "80 GB HBM2e", ("A100 SXM4 80GB", "A100 SXM 80GB")),
    GpuSpec("NVIDIA A100-SXM4-40GB", 1555.0, "40 GB HBM2", ("A100 SXM4 40GB", "A100 SXM 40GB")),
    GpuSpec("NVIDIA A100 80GB PCIe", 1935.0, "80 GB HBM2e", ("A100 PCIe 80GB",)),
    GpuSpec("NVIDIA A100-PCIE-40GB", 1555.0, "40 GB HBM2", ("A100 PCIe 40GB",)),
    GpuSpec("NVIDIA A800-SXM4-80GB", 2039.0, "80 GB HBM2e", ("A800 SXM4 80GB",)),
    GpuSpec("NVIDIA A800 80GB PCIe", 1935.0, "80 GB HBM2e"),
    GpuSpec("NVIDIA A40", 696.0, "48 GB GDDR6"),
    GpuSpec("NVIDIA A30", 933.0, "24 GB HBM2"),
    GpuSpec("NVIDIA A10", 600.0, "24 GB GDDR6"),
    GpuSpec("NVIDIA A10G", 600.0, "24 GB GDDR6"),
    GpuSpec("NVIDIA A2", 200.0, "16 GB GDDR6"),
    GpuSpec("NVIDIA RTX A6000", 768.0, "48 GB GDDR6", ("RTX A6000",)),
    GpuSpec("NVIDIA RTX A5000", 768.0, "24 GB GDDR6", ("RTX A5000",)),
    GpuSpec("NVIDIA GeForce RTX 3090", 936.0, "24 GB GDDR6X", ("RTX 3090",)),
    GpuSpec("NVIDIA GeForce RTX 3090 Ti", 1008.0, "24 GB GDDR6X", ("RTX 3090 Ti",)),
    # Volta and Turing
    GpuSpec("Tesla V100-SXM2-16GB", 900.0, "16 GB HBM2"),
    GpuSpec("Tesla V100-SXM2-32GB", 900.0, "32 GB HBM2"),
    GpuSpec("Tesla V100-PCIE-16GB", 900.0, "16 GB HBM2"),
    GpuSpec("Tesla V100-PCIE-32GB", 900.0, "32 GB HBM2"),
    GpuSpec("Tesla V100S-PCIE-32GB", 1134.0, "32 GB HBM2"),
    GpuSpec("Tesla T4", 320.0, "16 GB GDDR6", ("T4",)),
    # AMD (amd-smi's names), for bounds computed by hand
    GpuSpec("AMD Instinct MI300X", 5300.0, "192 GB HBM3", ("MI300X",)),
    GpuSpec("AMD Instinct MI325X", 6000.0, "256 GB HBM3e", ("MI325X",)),
)

_VENDOR = re.compile(r"^(?:nvidia|tesla|geforce|amd|instinct|quadro)+")


def normalize(name: str) -> str:
    """``NVIDIA A100-SXM4-80GB`` -> ``a100sxm480gb``: lower case, letters and digits only, no vendor prefix."""
    flat = "".join(ch for ch in name.lower() if ch.isalnum())
    return _VENDOR.sub("", flat)


def _index() -> dict[str, GpuSpec]:
    index: dict[str, GpuSpec] = {}
    for spec in SPECS:
        for key in (spec.name, *spec.aliases):
            norm = normalize(key)
            if norm in index and index[norm] is not spec:
                raise AssertionError(f"{key!r} names both {index[norm].name} and {spec.name}")
            index[norm] = spec
    return index


_INDEX = _index()


def lookup(name: str) -> GpuSpec | None:
    """The GPU of exactly this name (or alias); None when the table has no such GPU or the name is ambiguous."""
    wanted = normalize(name)
    return _INDEX.get(wanted) if wanted else None


def candidates(name: str, limit: int = 6) -> list[str]:
    """Table names the given one could be meant as (for a refusal's message): those that start with it."""
    wanted = normalize(name)
    if not wanted:
        return []
    found = sorted({spec.name for key, spec in _INDEX.items() if key.startswith(wanted)})
    return found[:limit]


def unknown_message(name: str, option: str = "--bandwidth-gbs") -> str:
    """One line for a GPU name the table does not know exactly."""
    maybe = candidates(name)
    if maybe:
        return f"GPU {name!r} is ambiguous: it could be {', '.join(maybe)}; give the full name or {option}"
    return f"GPU {name!r} is not in rigaudit's table of data-sheet bandwidths; give {option}"
