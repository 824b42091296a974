"""Read the device story's JSON results and print the figures the issue asks for, PASS or FAIL each.

  P2P:  rigaudit's one-way GB/s >= 95% of a plain torch peer copy in the same run, data intact.
  NCCL: rigaudit's busbw within 5% of a plain torch.distributed timing loop, per size.
  Inference: rigaudit's overhead < 1 ms per request, ITL within 5% of the fake server's schedule;
  plus the tiny GPU server's figures and the compare of its two runs.

Usage: python benchmarks/story_check.py OUTDIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MISSING: list[str] = []


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        print(f"  MISSING {path.name}: {exc}")
        MISSING.append(path.name)
        return None


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("out")
    failed = 0

    print("== P2P: rigaudit vs plain torch peer copy ==")
    ours, ref = _load(out / "p2p.json"), _load(out / "ref_peer.json")
    if ours and ref:
        plain = {(r["src"], r["dst"]): r["gbps"] for r in ref["rows"]}
        for pair in ours["pairs"]:
            base = plain.get((pair["src"], pair["dst"]))
            uni = pair["unidir_gbps"]
            ok = bool(pair["data_ok"] and uni and base and uni >= 0.95 * base)
            failed += not ok
            print(
                f"  GPU{pair['src']}→GPU{pair['dst']}: one way {uni or 0:.1f} GB/s vs plain {base or 0:.1f} GB/s "
                f"= {(uni or 0) / (base or 1):.1%}; both ways {pair['bidir_gbps'] or 0:.1f}; staged {pair['staged_gbps']:.1f}; "
                f"limit {pair['limit_gbps']} ({pair['link_detail']}); data {'ok' if pair['data_ok'] else 'CORRUPT'} "
                f"→ {'PASS' if ok else 'FAIL'}"
            )

    print("== NCCL all-reduce: rigaudit vs plain torch.distributed loop ==")
    ours, ref = _load(out / "nccl.json"), _load(out / "ref_nccl.json")
    if ours and ref:
        plain = {r["bytes"]: r["busbw_gbps"] for r in ref["rows"]}
        print(
            f"  {ours['tool']}, {ours['world_size']} GPUs, NCCL {ours['nccl_version']}, transport {ours['transport']} "
            f"{ours['transports']}, env {ours['env']}"
        )
        for row in ours["rows"]:
            base = plain.get(row["bytes"])
            ratio = row["busbw_gbps"] / base if base else 0.0
            ok = bool(base and abs(ratio - 1.0) <= 0.05 and row["data_ok"] is not False)
            failed += not ok
            print(
                f"  {row['bytes'] / 2**20:g} MiB: busbw {row['busbw_gbps']:.2f} GB/s vs plain {base or 0:.2f} GB/s "
                f"= {ratio:.1%} (algbw {row['algbw_gbps']:.2f}, {row['time_us']:.1f} µs, data {row['data_ok']}) "
                f"→ {'PASS' if ok else 'FAIL'}"
            )

    print("== Inference benchmark accuracy (fake server with known timing) ==")
    overhead = _load(out / "overhead.json")
    if overhead:
        ok = overhead["overhead_ms"] < 1.0 and all(r["itl_error"] < 0.05 for r in overhead["paced"])
        failed += not ok
        errors = ", ".join(f"c={r['concurrency']}: {r['itl_error']:.2%}" for r in overhead["paced"])
        print(f"  overhead {overhead['overhead_ms']:.3f} ms/request; ITL error {errors} → {'PASS' if ok else 'FAIL'}")

    print("== Inference benchmark on the tiny GPU server ==")
    for name in ("inference.json", "inference2.json"):
        result = _load(out / name)
        if result:
            for run in result["runs"]:
                print(
                    f"  {name} c={run['concurrency']} repeat {run['repeat'] + 1}: {run['output_tokens_per_s']:.1f} tok/s, "
                    f"TTFT p50 {run['ttft_ms_p50'] or 0:.1f} ms p99 {run['ttft_ms_p99'] or 0:.1f} ms, ITL p50 "
                    f"{run['itl_ms_p50'] or 0:.2f} ms p99 {run['itl_ms_p99'] or 0:.2f} ms, ok {run['requests_ok']} "
                    f"failed {run['requests_failed']}"
                )
    comparison = _load(out / "compare.json")
    if comparison:
        for level in comparison["levels"]:
            tput = level["metrics"][0]
            change, low, high = (tput[k] or 0 for k in ("change", "ci_low", "ci_high"))
            print(f"  compare c={level['concurrency']}: {change:+.1%} [{low:+.1%}, {high:+.1%}] → {level['verdict']}")
        for warning in comparison["warnings"]:
            print(f"  warning: {warning}")
    roof = _load(out / "roofline.json")
    if roof:
        print("== Roofline (tiny model, measured bandwidth) ==")
        print(
            f"  bound {roof['bound_tok_s']:.0f} tok/s, measured {roof['measured_tok_s']} tok/s, efficiency "
            f"{roof['efficiency']}; bandwidth {roof['bandwidth_gbs_per_gpu']:.0f} GB/s ({roof['bandwidth_source']})"
        )
    failed += len(MISSING)
    print(f"== {failed} check(s) failed{' (missing: ' + ', '.join(MISSING) + ')' if MISSING else ''} ==")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
