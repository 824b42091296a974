"""What today's rules say on every archetype: a table archetype x check -> status/severity.

    python -m tests.hostgen.table > docs/validation/archetypes-before.md

prints the Markdown document (one audit per archetype, rules only, no LLM).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping

import anyio

from rigaudit.agents.catalog import catalog
from rigaudit.orchestrator.audit.run import run_audit
from rigaudit.tools.hosts.snapshot import SnapshotHost
from rigaudit.tools.schema.audit import AuditResult
from tests.hostgen.archetypes import ALL
from tests.hostgen.cache import snapshot
from tests.hostgen.spec import HostSpec

RULES_AT = (
    "29053d1, after the first rule change of issue 19 (10bc7ec, platform as layers). That change already turned three "
    "verdicts of the table taken at 2b84a9e: the Kubernetes pod was taken for bare metal (its /dev/shm and CPU quota "
    "read not applicable, its missing /lib/modules became a medium `kernel.version` problem), and the DGX A100 got a "
    "low `kernel.version` for predating amd_pstate"
)
REVIEW: dict[str, tuple[str, ...]] = {
    "*": (
        "`power.cstates` medium on every bare-metal host with C6/C2 enabled: deep C-states do add wake-up latency at "
        "batch-1 decode, but this is the vendor default on every archetype here and its cost is small next to GPU time "
        "for batched serving; an expert rates it low unless the server is latency-bound (and a host that uses tuned's "
        "PM QoS keeps the states enabled in sysfs while never entering them).",
    ),
    "hgx-h200-noble": (
        "`driver.peermem` medium is wrong: kernel 6.8 with the open 570 driver and inbox rdma-core does GPUDirect RDMA "
        "through dma-buf; nvidia_peermem is not needed (and is not built without MLNX_OFED).",
    ),
    "dgx-a100-mig": (
        "`cuda.mig` high ('turn MIG off') is wrong: every MIG instance is in use by a vLLM replica; MIG is deliberate.",
        "`p2p.status` high is wrong: P2P between MIG-enabled GPUs is unsupported by design; the 6 pairs among GPUs "
        "4-7 are OK over NVLink.",
        "`power.scaling_driver` medium is advice the running kernel cannot take: 5.15 has no amd_pstate (5.17+), as "
        "`kernel.version` says in the same report.",
    ),
    "aws-p5-vm": (
        "`driver.peermem` medium is doubtful: the RDMA devices are EFA (not mlx5); GPUDirect RDMA on EFA goes through "
        "the efa driver's own peer-memory / dma-buf path with libfabric, not nvidia_peermem. Should be not applicable "
        "or unknown with what would tell.",
    ),
    "gcp-g2-2xl4-vm": (
        "`p2p.status` high with a fix 'on the hypervisor, reboot' is wrong: a cloud VM does not offer P2P between "
        "passed-through L4s (CHIPSET_NOT_SUPPORTED) and the user cannot change the hypervisor; NCCL falls back to "
        "shared memory. Informational (low) at most.",
    ),
    "k8s-pod-h100": (
        "`cuda.memory_in_use` medium is wrong: the workers belong to the vLLM server, which is PID 1 of the pod (the "
        "ancestor walk stops before PID 1).",
        "`container.cgroup_cpu` medium is wrong: 120 throttled periods of 91234 (0.13%) under a 32-CPU quota cost "
        "nothing measurable; an expert flags throttling from a few percent of periods up.",
        "The baseline lists '4 x NVIDIA GPU' besides the 4 H100s: sysfs shows the node's 8 GPUs, NVML the 4 the device "
        "plugin gave; the other 4 are not this pod's.",
        "`driver.fabricmanager` and `gpu.xid` unknown: right that they cannot be seen from the pod; they should say "
        "it is the node's to check.",
    ),
    "docker-h100-bm": (
        "`cuda.memory_in_use` medium is wrong (the server is PID 1 of the container, as in the pod).",
        "`power.cstates` puts the fix on 'hypervisor': a Docker host on bare metal is not a hypervisor; the fix runs on "
        "the container's host.",
    ),
    "docker-in-gcp-vm": (
        "`cuda.memory_in_use` medium is wrong (the server is PID 1).",
        "`p2p.status` high: as in gcp-g2-2xl4-vm, not a fault the user can fix.",
        "`container.shm` medium is right in substance (64 MiB breaks NCCL's shared-memory transport between the two "
        "workers); an expert would rate it high for a TP 2 server.",
    ),
    "intel-snc-h100pcie": (
        "`p2p.status` high: GPUs on different sockets of an Intel host report IOH_TOPOLOGY_NOT_SUPPORTED (P2P over "
        "UPI is not supported); that is the platform, not a fault with a reboot fix. Low/informational, and a hint to "
        "keep TP groups within a socket.",
    ),
    "geforce-4x4090": (
        "`p2p.status` high is wrong: GeForce boards have no P2P (NOT_SUPPORTED by the driver); nothing to fix.",
        "`nccl.env` high is wrong: NCCL_P2P_DISABLE=1 is harmless where P2P is not supported.",
    ),
    "l40s-pex-iommu": (
        "`pcie.acs` high is right: ACS ReqRedir/CmpltRedir on the PEX downstream ports send GPU-GPU traffic through "
        "the root complex.",
        "`p2p.status` high on the cross-socket pairs: the platform (Intel, UPI), as on intel-snc-h100pcie.",
    ),
    "gh200-node": (
        "`driver.peermem` medium is wrong: kernel 6.8 with the open driver uses dma-buf for GPUDirect RDMA.",
        "`firmware.cppc` unknown and `power.boost` unknown on Grace: cppc_cpufreq is the only driver there; these "
        "checks are x86 notions and should be not applicable.",
    ),
    "hgx-h100-upgraded-no-reboot": (
        "One cause, three problems: `driver.library_mismatch` (high) is the root cause (reboot pending); "
        "`driver.fabricmanager` critical offers 'start it', which cannot work before the reboot; "
        "`driver.fabricmanager_version` high is a consequence of the same upgrade.",
        "Every NVML-based check reads unknown (right), but none says the reboot is what would tell.",
    ),
}
"""What an expert says of today's verdicts on each archetype (reviewed by hand against the table; ``*``: all)."""

SHORT = {"problem": "P", "unknown": "?", "not_applicable": "n/a", "ok": "ok"}


def audit(spec: HostSpec) -> AuditResult:
    return anyio.run(lambda: run_audit(SnapshotHost(snapshot(spec))))


def cell(status: str, severity: str | None) -> str:
    return f"**P:{severity}**" if status == "problem" else SHORT.get(status, status)


def verdicts(results: Mapping[str, AuditResult]) -> dict[str, dict[str, str]]:
    """archetype -> check id -> cell text."""
    return {name: {f.check: cell(f.status, f.severity) for f in result.findings} for name, result in results.items()}


def render(specs: Iterable[HostSpec], results: Mapping[str, AuditResult]) -> str:
    specs = list(specs)
    table = verdicts(results)
    checks = list(dict.fromkeys([c.id for c in catalog()] + [c for row in table.values() for c in row]))
    names = [s.name for s in specs]
    out = [
        "# What today's rules say on the generated archetypes (before issue 19's rule changes)",
        "",
        "Generated by `python -m tests.hostgen.table` from the fixtures of `tests/hostgen/` (rules only, no LLM), on",
        f"main at {RULES_AT}.",
        "A cell is `ok`, `n/a` (not applicable), `?` (unknown) or **P:severity** (a problem). The section after the",
        "table lists, per archetype, the problems reported and which verdicts look wrong to an expert, and why.",
        "",
        "## The archetypes",
        "",
    ]
    for n, spec in enumerate(specs, 1):
        out.append(f"{n}. `{spec.name}`: {spec.summary}. Expert view: {spec.expect or 'healthy'}.")
    out += ["", "## Check x archetype", ""]
    out.append("| check | " + " | ".join(str(n) for n in range(1, len(names) + 1)) + " |")
    out.append("| --- |" + " --- |" * len(names))
    for check in checks:
        row = [table[name].get(check, "-") for name in names]
        out.append(f"| `{check}` | " + " | ".join(row) + " |")
    out += ["", "## Verdicts that look wrong to an expert", ""]
    for note in REVIEW.get("*", ()):
        out.append(f"- all archetypes: {note}")
    for spec in specs:
        for note in REVIEW.get(spec.name, ()):
            out.append(f"- `{spec.name}`: {note}")
    out += ["", "## Problems reported, per archetype", ""]
    for spec in specs:
        result = results[spec.name]
        problems = [f for f in result.findings if f.status == "problem"]
        out.append(f"### `{spec.name}`")
        out.append("")
        if not problems:
            out.append("No problem reported.")
        for f in problems:
            observed = (f.observed or "").replace("|", "/").replace("\n", " ")
            where = f" (fix on {f.fix.where}, {f.fix.kind})" if f.fix is not None else ""
            out.append(f"- `{f.check}` **{f.severity}**{where}: {observed[:300]}")
        out.append("")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    names = argv if argv else list(ALL)
    specs = [ALL[n] for n in names]
    results = {spec.name: audit(spec) for spec in specs}
    sys.stdout.write(render(specs, results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
