"""The gate's speed: `rigaudit check` as a new process (what a prolog pays), on snapshots and live.

Run:
  python benchmarks/gate_speed.py                 the seed and the H200 fixtures (snapshots), and the imports
  python benchmarks/gate_speed.py --live          also `rigaudit check` on this machine (the H200 figure)
  python benchmarks/gate_speed.py --repeats 9 --snapshot DIR
  python benchmarks/gate_speed.py --instructions  also count the start's instructions (valgrind): load-proof

Prints, for each run: wall time with process start (best and median of the repeats), CPU time
(user + system), and the verdict; then the interpreter's start, a process that only starts and
imports what the gate imports (with the bytecode cached, as an installed package has it, and with
none: a fresh copy under PYTHONDONTWRITEBYTECODE compiles every module at every start), the gate's
imports as `python -X importtime` reports them (top-level modules summed) and the ten costliest
packages. The bytecode of every module on the path is compiled first (``compileall``, where it may
be written), so the figures do not depend on what earlier runs left. On a loaded machine the CPU
figures are the steadier, and the instruction counts (``--instructions``, where valgrind is
installed) do not depend on the load at all.
With $OUT set, the figures also go to $OUT/gate_speed.json. docs/performance.md records them.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
SNAPSHOTS = ("seed-lxc-8x-rtxpro6000", "h200x1-vm", "h200x2-vm")
PROLOG = "pcie,gpu,driver,nvlink"
"""The areas deploy/slurm/prolog.sh judges (its expectations aside)."""
_IMPORT = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def children_cpu() -> float:
    """User + system seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], repeats: int, env: dict[str, str] | None = None) -> dict[str, object]:
    """Wall and CPU seconds of ``argv`` as a new process, ``repeats`` times."""
    walls: list[float] = []
    cpus: list[float] = []
    first = ""
    code = None
    for _ in range(repeats):
        cpu = children_cpu()
        start = time.perf_counter()
        done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120, env=env)
        walls.append(time.perf_counter() - start)
        cpus.append(children_cpu() - cpu)
        code = done.returncode
        first = (done.stdout.splitlines() or [done.stderr.strip()])[0]
    return {
        "best_s": round(min(walls), 3),
        "median_s": round(statistics.median(walls), 3),
        "cpu_best_s": round(min(cpus), 3),
        "exit": code,
        "reason": first[:100],
    }


_DEPENDENCIES = ("pydantic", "pydantic_core", "anyio", "annotated_types", "typing_inspection", "typing_extensions", "sniffio")
_NOT_RIGAUDIT = re.compile(r"/(\.venv|\.git|\.whl|build|tests|benchmarks)/")


def compile_bytecode() -> int:
    """Compile the bytecode of rigaudit and of its dependencies where it may be written; how many were compiled."""
    import importlib

    import rigaudit

    done = 0
    repository = Path(rigaudit.__file__).resolve().parent.parent
    if os.access(repository, os.W_OK):
        compileall.compile_dir(repository, quiet=2, rx=_NOT_RIGAUDIT)
        done += 1
    for name in _DEPENDENCIES:
        try:
            where = Path(importlib.import_module(name).__file__ or "").resolve()
        except ImportError:
            continue
        if where.name == "__init__.py" and os.access(where.parent, os.W_OK):
            done += compileall.compile_dir(where.parent, quiet=2) and 1
        elif where.suffix == ".py" and os.access(where.parent, os.W_OK):
            done += compileall.compile_file(where, quiet=2) and 1
    return done


def instructions(argv: list[str], env: dict[str, str] | None = None) -> float | None:
    """Millions of instructions ``argv`` executes (valgrind's callgrind), or ``None`` without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    return round(int(found.group(1)) / 1e6, 1) if found else None


def imports(argv: list[str]) -> dict[str, object]:
    """The gate's imports as ``-X importtime`` reports them: total of the top-level modules, and the costliest."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], check=False, capture_output=True, text=True, timeout=120)
    rows = [m for line in done.stderr.splitlines() if (m := _IMPORT.match(line))]
    top = [(m.group(4), int(m.group(2))) for m in rows if len(m.group(3)) == 1]  # depth 0: one space after '|'
    by_package: dict[str, int] = {}
    for m in rows:
        name = m.group(4)
        parts = name.split(".")
        key = ".".join(parts[:3]) if parts[0] == "rigaudit" else parts[0]
        by_package[key] = by_package.get(key, 0) + int(m.group(1))
    costly = sorted(by_package.items(), key=lambda kv: -kv[1])[:10]
    return {
        "modules": len(rows),
        "total_s": round(sum(us for _, us in top) / 1e6, 3),
        "costliest_ms": {name: round(us / 1000, 1) for name, us in costly},
    }


def _path_of(*options: str) -> list[str]:
    code = "import json, sys; print(json.dumps(sys.path))"
    done = subprocess.run([sys.executable, *options, "-c", code], check=True, capture_output=True, text=True, timeout=60)
    path: list[str] = json.loads(done.stdout)
    return path


def without_site() -> tuple[dict[str, str], dict[str, object]]:
    """The environment in which ``python -S`` (no ``site``: no ``.pth`` file run, no site module) finds what
    ``python`` finds: the folders ``site`` adds, on ``PYTHONPATH``; and whether the gate and NVML's binding
    import so (a package that needs a ``.pth`` file would not)."""
    under_s = _path_of("-S")
    added = [p for p in _path_of() if p and p not in under_s and Path(p).is_dir()]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (os.environ.get("PYTHONPATH", ""), *added))))

    def importable(names: str) -> bool:
        argv = [sys.executable, "-S", "-c", f"import {names}"]
        return subprocess.run(argv, check=False, capture_output=True, timeout=60, env=env).returncode == 0

    found = {"site_folders": added, "gate": importable("rigaudit.orchestrator.gate.run, pydantic, anyio")}
    found["nvml"] = importable("pynvml")
    return env, found


_OUTSIDE_STDLIB = """
import json, sys, sysconfig
started = set(sys.modules)  # what site imported: not the gate's
{imports}
import anyio
anyio.run(anyio.sleep, 0)  # the event loop's backend and what it imports
try:
    import pynvml
except ImportError:
    pass
base = {{"base": sys.base_prefix, "platbase": sys.base_exec_prefix, "installed_base": sys.base_prefix,
        "installed_platbase": sys.base_exec_prefix}}
stdlib = {{sysconfig.get_paths(vars=base)[k] for k in ("stdlib", "platstdlib")}}
places = {{}}
for name, module in list(sys.modules.items()):
    where = getattr(module, "__file__", None) or ""
    parts = where.split("/")
    if "." in name or name in started or not where:
        continue
    if any(where.startswith(s + "/") for s in stdlib) and "site-packages" not in parts and "dist-packages" not in parts:
        continue
    places[name] = where.rsplit("/", 1)[0] if where.endswith("/__init__.py") else where
print(json.dumps(places))
"""


def own_venv(folder: Path, gate_imports: str) -> tuple[list[str], dict[str, str]] | None:
    """A virtual environment of its own under ``folder`` holding only what the gate imports (rigaudit, pydantic,
    anyio... and NVML's binding, linked from where this interpreter finds them): what ``pip install rigaudit``
    in a fresh venv makes, without the ``site`` of the environment this runs in (a torch environment's
    ``.pth`` files import typing, inspect, zipfile and urllib at every start). Its python, and the environment
    to run it in (no ``PYTHONPATH``); ``None`` where no venv can be made."""
    program = _OUTSIDE_STDLIB.format(imports=gate_imports)
    found = subprocess.run([sys.executable, "-c", program], check=False, capture_output=True, text=True, timeout=120)
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=False, capture_output=True)
    if found.returncode != 0 or made.returncode != 0:
        return None
    python = str(folder / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    for where in json.loads(found.stdout).values():
        source = Path(where)
        (Path(purelib) / source.name).symlink_to(source.resolve())
    return [python], env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--snapshot", type=Path, action="append", help="measure this snapshot (repeatable)")
    parser.add_argument("--live", action="store_true", help="also `rigaudit check` on this machine")
    parser.add_argument("--instructions", action="store_true", help="also count instructions with valgrind (slow)")
    args = parser.parse_args()
    print(f"bytecode compiled in {compile_bytecode()} packages (rigaudit and its dependencies, where writable)", flush=True)
    rigaudit = [sys.executable, "-m", "rigaudit", "check", "-q"]
    figures: dict[str, object] = {"python": sys.version.split()[0], "load_average": os.getloadavg()[0]}
    snapshots = args.snapshot or [FIXTURES / name for name in SNAPSHOTS]
    runs: dict[str, object] = {}
    for snapshot in snapshots:
        for label, extra in (
            ("all checks", []),
            ("prolog set (--only pcie,gpu,driver,nvlink)", ["--only", "pcie,gpu,driver,nvlink"]),
        ):
            key = f"{snapshot.name}: {label}"
            runs[key] = timed([*rigaudit, "--snapshot", str(snapshot), *extra], args.repeats)
            print(f"{key:<62} {runs[key]}", flush=True)
    if args.live:
        runs["live: all checks"] = timed(rigaudit, args.repeats)
        print(f"{'live: all checks':<62} {runs['live: all checks']}", flush=True)
        runs["live: prolog set"] = timed([*rigaudit, "--only", PROLOG], args.repeats)
        print(f"{'live: prolog set':<62} {runs['live: prolog set']}", flush=True)
    figures["runs"] = runs
    gate_imports = (  # what a live `rigaudit check` imports before its run, pydantic's plugins off as the command has them
        "from rigaudit.orchestrator.gate import without_cyclic_collector, without_pydantic_plugins\n"
        "with without_pydantic_plugins(), without_cyclic_collector():\n"
        " import rigaudit.orchestrator.cli, rigaudit.orchestrator.commands.check, rigaudit.orchestrator.gate.run, "
        "rigaudit.orchestrator.gate.render, rigaudit.tools.hosts.local\n"
        " from rigaudit.agents.registry import all_investigators; all_investigators()"
    )
    site_free, no_site = without_site()
    figures["without_site"] = no_site
    print(f"{'python -S, site folders on PYTHONPATH: gate, NVML importable':<62} {no_site}")
    starts: dict[str, object] = {}
    variants: list[tuple[str, list[str], dict[str, str] | None]] = [("", [], None), (" -s", ["-s"], None)]
    if no_site["gate"]:
        variants.append((" -S", ["-S"], site_free))
    for flag, options, env in variants:
        starts[f"interpreter start (python{flag} -c pass)"] = timed([sys.executable, *options, "-c", "pass"], args.repeats, env)
        imported = timed([sys.executable, *options, "-c", gate_imports], args.repeats, env)
        starts[f"start + the imports of the gate (python{flag})"] = imported
    for key, value in starts.items():
        print(f"{key:<62} {value}")
    figures["starts"] = starts
    figures["interpreter_start"] = starts["interpreter start (python -c pass)"]
    figures["start_and_imports"] = starts["start + the imports of the gate (python)"]
    if args.live and no_site["gate"] and no_site["nvml"]:
        runs["live: all checks, python -S"] = timed([sys.executable, "-S", *rigaudit[1:]], args.repeats, site_free)
        print(f"{'live: all checks, python -S':<62} {runs['live: all checks, python -S']}", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        venv = own_venv(Path(scratch) / "venv", gate_imports)
        if venv is not None:
            python, env = venv
            own = {
                "interpreter start (python -c pass)": timed([*python, "-c", "pass"], args.repeats, env),
                "start + the imports of the gate": timed([*python, "-c", gate_imports], args.repeats, env),
            }
            if args.live:
                own["live: all checks"] = timed([*python, *rigaudit[1:]], args.repeats, env)
            own["a check of the last snapshot"] = timed(
                [*python, *rigaudit[1:], "--snapshot", str(snapshots[-1])], args.repeats, env
            )
            figures["own_venv"] = own
            for key, value in own.items():
                print(f"{'venv of its own: ' + key:<62} {value}", flush=True)
    with tempfile.TemporaryDirectory() as empty:  # no cached bytecode: every module compiled at the start
        cold = [sys.executable, "-X", f"pycache_prefix={empty}", "-B", "-c", gate_imports]
        figures["start_and_imports_no_bytecode"] = timed(cold, max(1, args.repeats // 2))
    print(f"{'the same, no cached bytecode (a fresh copy, -B)':<62} {figures['start_and_imports_no_bytecode']}")
    figures["site_imports"] = imports(["-c", "pass"])
    print(f"{'what the interpreter imports to start (-X importtime -c pass)':<62} {figures['site_imports']}")
    if args.instructions:
        counted = {
            "interpreter start": [sys.executable, "-c", "pass"],
            "start + the imports of the gate": [sys.executable, "-c", gate_imports],
            "a check of the last snapshot": [*rigaudit, "--deadline", "600", "--snapshot", str(snapshots[-1])],
        }
        counts = {label: instructions(argv) for label, argv in counted.items()}
        if no_site["gate"]:
            without = {"interpreter start, -S": "pass", "start + the imports of the gate, -S": gate_imports}
            for label, code in without.items():
                counts[label] = instructions([sys.executable, "-S", "-c", code], site_free)
        figures["instructions_millions"] = counts
        print(f"{'instructions (millions, valgrind)':<62} {figures['instructions_millions']}")
    figures["imports"] = imports(["-m", "rigaudit", "check", "-q", "--snapshot", str(snapshots[-1])])
    print(f"{'imports of the gate (-X importtime)':<62} {figures['imports']}")
    print(f"load average: {os.getloadavg()[0]:.1f} (this machine's CPUs may be shared)")
    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gate_speed.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
