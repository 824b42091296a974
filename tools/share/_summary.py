"""``SHARE.md``: a summary block to paste into a support thread as it is, then what was replaced."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rigaudit.tools.redact import KIND_LABELS as SECRET_LABELS
from rigaudit.tools.schema.finding import SEVERITY_ORDER, Finding
from rigaudit.tools.share._pseudonyms import KIND_LABELS
from rigaudit.tools.share._rewrite import Stats
from rigaudit.tools.share._tree import Tree

_FACT_ORDER = ("platform", "cpu", "memory", "numa_nodes", "gpus", "driver", "cuda_driver", "kernel", "os")
_CLIP = 110


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."


def light_facts(tree: Tree) -> dict[str, str]:
    """Kernel, OS, CPU, GPUs and driver read straight from a snapshot (when there is no audit result)."""
    facts: dict[str, str] = {}

    def text(path: str) -> str:
        return tree.files.get(path, b"").decode("utf-8", "replace")

    if kernel := text("/proc/sys/kernel/osrelease").strip():
        facts["kernel"] = kernel
    for line in text("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            facts["os"] = line.split("=", 1)[1].strip().strip('"')
    cpuinfo = text("/proc/cpuinfo").splitlines()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    if model:
        facts["cpu"] = model
    names: Counter[str] = Counter()
    for record in tree.nvml_records():
        if record.get("fn") == "nvmlDeviceGetName" and isinstance(record.get("result"), str):
            names[str(record["result"])] += 1
        if record.get("fn") == "nvmlSystemGetDriverVersion" and isinstance(record.get("result"), str):
            facts["driver"] = str(record["result"])
    if names:
        facts["gpus"] = ", ".join(f"{n} x {name}" for name, n in names.items())
    return facts


def _host_line(facts: dict[str, str]) -> str:
    parts = [facts[k] for k in ("platform", "cpu", "memory") if facts.get(k)]
    if facts.get("numa_nodes"):
        parts.append(f"{facts['numa_nodes']} NUMA node{'' if facts['numa_nodes'] == '1' else 's'}")
    return "; ".join(parts) or "?"


def _problems(findings: Sequence[Finding] | None) -> list[str]:
    if findings is None:
        return ["problems: not audited (rigaudit audit --snapshot FOLDER)"]
    problems = [f for f in findings if f.status == "problem"]
    problems.sort(key=lambda f: (SEVERITY_ORDER.get(f.severity or "", 9), f.check))
    unknown = sum(1 for f in findings if f.status == "unknown")
    by_severity: Counter[str] = Counter(str(f.severity) for f in problems)
    severities = ", ".join(f"{by_severity[s]} {s}" for s in SEVERITY_ORDER if by_severity[s])
    head = f"problems: {len(problems)}" + (f" ({severities})" if severities else "")
    head += f"; {unknown} unknown, {len(findings)} checks"
    lines = [head]
    for f in problems:
        observed = f" ({f.observed})" if f.observed else ""
        lines.append("  " + _clip(f"{(f.severity or '?'):<8} {f.check}: {f.title}{observed}"))
    return lines


def replaced_line(counts: dict[str, tuple[int, int]], stats: Stats) -> str:
    kinds = ", ".join(f"{KIND_LABELS[kind].split(' (')[0]} {values}" for kind, (values, _) in counts.items() if values)
    extras = [f"secrets redacted {stats.redacted}"]
    if stats.dsn_zeroed:
        extras.append(f"PCIe device serial numbers zeroed {stats.dsn_zeroed}")
    if stats.vpd_masked:
        extras.append(f"VPD serial numbers masked {stats.vpd_masked}")
    return "replaced: " + (kinds or "nothing identifying found") + "; " + ", ".join(extras)


def summary_block(
    *,
    host: str,
    taken_at: str,
    facts: dict[str, str],
    findings: Sequence[Finding] | None,
    counts: dict[str, tuple[int, int]],
    stats: Stats,
) -> str:
    """The paste-ready block: host shape, GPUs, driver, kernel, problems, what was replaced (counts only)."""
    driver = facts.get("driver", "?") + (f" (CUDA {facts['cuda_driver']})" if facts.get("cuda_driver") else "")
    kernel = facts.get("kernel", "?") + (f" ({facts['os']})" if facts.get("os") else "")
    lines = [
        f"rigaudit share bundle of {host}" + (f", snapshot taken {taken_at}" if taken_at else ""),
        f"host:    {_host_line(facts)}",
        f"gpus:    {facts.get('gpus', '?')}",
        f"driver:  {driver}",
        f"kernel:  {kernel}",
        *_problems(findings),
        replaced_line(counts, stats),
    ]
    return "\n".join(lines)


def share_markdown(block: str, *, counts: dict[str, tuple[int, int]], stats: Stats, folder: str, archive: str) -> str:
    rows = [f"| {KIND_LABELS[kind]} | {values} | {hits} |" for kind, (values, hits) in counts.items()]
    table = ["| kind | distinct values | occurrences |", "| --- | ---: | ---: |", *rows]
    if not rows:
        table = ["Nothing identifying was found."]
    secrets = [f"| {SECRET_LABELS[kind]} | {n} |" for kind, n in sorted(stats.secrets.items()) if n and kind != "binary"]
    if stats.recorded:
        secrets.append(f"| redacted when the snapshot was recorded | {stats.recorded} |")
    redacted = [
        f"Secrets (keys, tokens, passwords, credentials) are redacted: {stats.redacted} values in all.",
        "",
        *(["| what | values |", "| --- | ---: |", *secrets] if secrets else []),
    ]
    procs = stats.processes
    notes = [
        *(
            [f"- known token formats inside binary files, overwritten in place: {stats.secrets['binary']}"]
            if stats.secrets["binary"]
            else []
        ),
        f"- PCIe Device Serial Number (ext. capability 0x0003): its 8 bytes zeroed in {stats.dsn_zeroed} configuration spaces",
        f"- VPD serial numbers (SN): masked in {stats.vpd_masked} files",
        f"- file names renamed because they held identifying values: {stats.renamed}",
        "- binary files (PCI configuration space) are otherwise byte for byte the original",
        f"- left out: {stats.binary_left_out} binary files (keys, databases), {stats.credential_files_left_out} credential files",
        f"- processes: {procs.kept} (inference servers, GPU processes, PID 1) keep their command line and environment;"
        f" {procs.others} others keep only their program's name, and {procs.environments_left_out} environments"
        " were left out",
    ]
    if stats.unbounded:
        notes.append(f"- of the occurrences above, glued to other words and replaced as bare text: {stats.unbounded}")
    return "\n".join(
        [
            "# rigaudit share bundle",
            "",
            "```text",
            block,
            "```",
            "",
            "Paste the block above into a support thread as it is.",
            "",
            "## What was replaced",
            "",
            "Host, domain, container and user names, serial numbers, UUIDs, MAC and IP addresses were replaced by",
            "placeholders (`host-1`, `container-1`, `serial-1`, `GPU-00000000-0000-0000-0000-000000000001`,",
            "`02:00:00:00:00:01`, `192.0.2.1`, `user-1`). The same value has the same placeholder everywhere in this",
            "bundle, so an audit of it still sees which GPU is which. The values themselves are listed nowhere.",
            "",
            *table,
            "",
            *redacted,
            "",
            *notes,
            "",
            "## Audit it",
            "",
            f"    tar xzf {archive} && rigaudit audit --snapshot {folder}",
            "",
        ]
    )
