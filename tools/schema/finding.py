"""Findings, fixes and actions: the answer to one check.

Every name an Action carries (PCI address, sysctl key, module, unit, sysfs path, value) is
checked against its grammar when the Action is built (:mod:`rigaudit.tools.schema.names`), so
text read from a host can never become a shell word or a path outside /sys.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from rigaudit.tools.schema import names

Area = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
"""An investigator's area: a lower-case name. Which areas exist is discovered (``rigaudit.agents.registry``), so
this type only checks the shape; the orchestrator checks a finding's area is one it knows."""

RENAMED_AREAS: dict[str, tuple[str, ...]] = {
    "kernel_params": ("kernel",),
    "kernel_version": ("kernel",),
    "cuda_memory": ("cuda",),
    "nccl_p2p": ("p2p", "nccl"),
}
"""Areas of older releases and the areas that hold their checks now. Findings, audit results and transcripts
written with the old names load with the new ones (a check's area is the prefix of its id)."""


def current_area(area: str, check: str = "") -> str:
    """``area`` as today's releases name it: a renamed area becomes the one holding ``check``."""
    now = RENAMED_AREAS.get(area)
    if now is None:
        return area
    prefix = check.split(".", 1)[0]
    return prefix if prefix in now else now[0]


Status = Literal["ok", "problem", "unknown", "not_applicable"]
Severity = Literal["critical", "high", "medium", "low"]
FixKind = Literal["runtime", "restart", "reboot", "firmware", "hardware"]
Where = Literal["host", "hypervisor", "container_host", "container_config", "container", "guest"]
"""The layer a fix runs on, seen from where the audit ran.

- ``host``: this host, the machine (or VM guest) whose kernel the audit ran on;
- ``hypervisor``: the VM's definition or the hypervisor below it (its BIOS, slots, CPU power management, vCPU
  pinning, MMIO window), or the cloud provider: the audit ran in a VM guest;
- ``container_host``: the machine that runs the container the audit ran in (its kernel, modules, NVIDIA driver,
  BIOS): a Docker host, a Kubernetes node, a Proxmox node;
- ``container_config``: the container's runtime options (``docker run`` flags, a pod spec, an LXC config);
- ``container``: inside the container (its processes, environment, packages);
- ``guest``: a VM guest that this host serves (a GPU bound to vfio-pci belongs to it).

Snapshots of older audits carry only ``host``, ``hypervisor`` and ``container``, which keep their meaning.
"""
WHERE_TEXT: dict[str, str] = {
    "host": "this host",
    "hypervisor": "the hypervisor",
    "container_host": "the container's host",
    "container_config": "the container's runtime options",
    "container": "inside the container",
    "guest": "the VM guest",
}
"""How a person reads each layer: "runs on this host", "runs on the container's host"."""
Risk = Literal["low", "medium", "high"]

SEVERITY_ORDER: dict[str, int] = {"critical": 0, "high": 1, "medium": 2, "low": 3}
FIX_KIND_ORDER: dict[str, int] = {"runtime": 0, "restart": 1, "reboot": 2, "firmware": 3, "hardware": 4}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


BdfName = Annotated[str, AfterValidator(names.bdf)]
SysctlKey = Annotated[str, AfterValidator(names.sysctl_key)]
ModuleName = Annotated[str, AfterValidator(names.module_name)]
UnitName = Annotated[str, AfterValidator(names.unit_name)]
SysfsPath = Annotated[str, AfterValidator(names.sysfs_path)]
ValueText = Annotated[str, AfterValidator(names.value_text)]
PciCapability = Annotated[str, AfterValidator(names.pci_capability)]


class SysctlAction(_Frozen):
    """Write a sysctl through /proc/sys (``key`` in dotted form)."""

    type: Literal["sysctl"] = "sysctl"
    key: SysctlKey
    value: ValueText


class SysfsWriteAction(_Frozen):
    """Write ``value`` to each of ``paths`` (cpuidle disable, governor, EPP, boost...)."""

    type: Literal["sysfs_write"] = "sysfs_write"
    paths: tuple[SysfsPath, ...] = Field(min_length=1)
    value: ValueText


class PciRegisterAction(_Frozen):
    """Write ``value`` under ``mask`` into a config-space register of each device.

    ``capability`` names where ``offset`` is counted from: ``"header"`` (absolute),
    ``"exp"`` (the PCI Express capability) or ``"ecap:0x000d"`` (an extended capability).
    """

    type: Literal["pci_register"] = "pci_register"
    devices: tuple[BdfName, ...] = Field(min_length=1)
    capability: PciCapability
    offset: int = Field(ge=0, lt=4096)
    width: Literal[1, 2, 4]
    value: int = Field(ge=0)
    mask: int = Field(ge=0)

    @model_validator(mode="after")
    def _fits(self) -> PciRegisterAction:
        top = 1 << (8 * self.width)
        if self.value >= top or self.mask >= top:
            raise ValueError(f"value {self.value:#x} or mask {self.mask:#x} does not fit {self.width} byte(s)")
        return self


class ModuleLoadAction(_Frozen):
    type: Literal["module_load"] = "module_load"
    module: ModuleName


class ServiceStartAction(_Frozen):
    type: Literal["service_start"] = "service_start"
    unit: UnitName


class CommandAction(_Frozen):
    """A step that can only be described as a command (kernel command line, BIOS...).

    Never executed by ``apply``; shown to the person and written to emitted scripts.
    """

    type: Literal["command"] = "command"
    argv: tuple[str, ...] = ()
    description: str


Action = Annotated[
    SysctlAction | SysfsWriteAction | PciRegisterAction | ModuleLoadAction | ServiceStartAction | CommandAction,
    Field(discriminator="type"),
]


EdgeKind = Literal["requires", "not_before", "moot_after", "conflicts"]
"""How one fix depends on another step of the plan:

- ``requires``: it can only succeed once the other has run (it runs after it; not at all if the other did not run);
- ``not_before``: it is unsafe until the other has run (same order; an order that breaks it is refused);
- ``moot_after``: the other fixes this problem too (a reboot that resets it): the two merge into the other's step;
- ``conflicts``: only one of the two can stand; the better-ranked one runs, the other only if it did not.
"""
EDGE_TEXT: dict[str, str] = {
    "requires": "needs",
    "not_before": "unsafe before",
    "moot_after": "moot after",
    "conflicts": "conflicts with",
}
FACT_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$"


class Edge(_Frozen):
    """An edge a rule declares from its facts, to a step named by its check id or by a fact it establishes
    (``Fix.provides``): "unsafe before the step that sets iommu=pt" is ``Edge(kind="not_before",
    fact="iommu.passthrough", why=...)``. An edge to a step the plan does not hold is already satisfied (nothing
    waits: the other check found no problem)."""

    kind: EdgeKind
    check: Annotated[str, StringConstraints(max_length=80)] = ""
    fact: Annotated[str, StringConstraints(pattern=FACT_PATTERN, max_length=80)] | Literal[""] = ""
    why: str = ""

    @model_validator(mode="after")
    def _one_target(self) -> Edge:
        if bool(self.check) == bool(self.fact):
            raise ValueError("an edge names exactly one of check or fact")
        return self


GainOf = Literal["throughput", "stability"]


class Gain(_Frozen):
    """What a fix can buy on this workload: a range in percent of its throughput, and the reasoning.

    ``stability``: the server fails, hangs or computes wrong results until it is fixed (no percentage holds).
    """

    low: float = Field(ge=0, le=10_000)
    high: float = Field(ge=0, le=10_000)
    why: str
    of: GainOf = "throughput"

    @model_validator(mode="after")
    def _ordered(self) -> Gain:
        if self.low > self.high:
            raise ValueError(f"gain range {self.low}-{self.high} is reversed")
        return self

    def text(self) -> str:
        """``2-10%: why`` (or ``stability: why``)."""
        if self.of == "stability":
            return f"stability: {self.why}"
        return f"{self.low:g}-{self.high:g}% of throughput: {self.why}"


class Fix(_Frozen):
    """How to fix a problem: what kind of change, where, exactly what, and how to undo it.

    ``edges`` and ``provides`` place it in the plan's graph; ``gain`` is what it can buy here (the planner
    estimates one from the check and its severity when a rule does not say).
    """

    kind: FixKind
    where: Where
    summary: str
    actions: tuple[Action, ...] = ()
    risk: Risk = "low"
    verify: str = ""
    revert: str = ""
    persist: str = ""
    edges: tuple[Edge, ...] = ()
    provides: tuple[Annotated[str, StringConstraints(pattern=FACT_PATTERN, max_length=80)], ...] = ()
    """Facts this fix establishes once it has run (``iommu.passthrough``, ``driver.reloaded``)."""
    gain: Gain | None = None


PremiseState = Literal["held", "missing"]


class PremiseRead(_Frozen):
    """One premise of a check as this audit found it: a fact the verdict rests on (the platform's layers, the
    running kernel, the GPU model...), ``held`` with its ``value`` or ``missing`` with what would tell."""

    name: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)]
    state: PremiseState
    value: str = ""
    """What it was read as (held), or what would tell (missing)."""


class Finding(_Frozen):
    """The answer to one check on one host."""

    @model_validator(mode="before")
    @classmethod
    def _renamed_area(cls, data: Any) -> Any:
        """A finding of an older release names its area as it was then (``kernel_params``): name it as now."""
        if isinstance(data, dict) and isinstance(data.get("area"), str) and data["area"] in RENAMED_AREAS:
            return {**data, "area": current_area(str(data["area"]), str(data.get("check", "")))}
        return data

    check: str
    area: Area
    status: Status
    severity: Severity | None = None
    title: str
    subjects: tuple[str, ...] = ()
    observed: str = ""
    expected: str = ""
    explanation: str = ""
    evidence: tuple[str, ...] = ()
    fix: Fix | None = None
    premises: tuple[PremiseRead, ...] = ()
    """The check's premises as this audit read them (empty: none declared, or a finding of an older release)."""
    source: Literal["rules", "llm"] = "rules"
    layer: Literal["node", "workload"] | None = None
    """Whose fault this problem is, where the rule knows from where its cause lives (a host file or a node daemon:
    ``node``; a server's own environment or image: ``workload``); ``None``: its check's ``Check.layer``."""
