#!/usr/bin/env bash
# The seed story end to end on a GPU machine, as its user would run it (issue "The whole story on real hardware").
#
#   usage: benchmarks/device_full_story.sh OUTDIR
#
# snapshot -> audit (report, JSON, transcript) -> baseline inference benchmark on a tiny random model
# -> apply the runtime plan's kernel/CPU steps (never a GPU setting) -> P2P and NCCL validation
# -> rerun inference -> compare -> rollback -> re-audit. Every result lands in OUTDIR; story.tar.gz packs it.
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL="${1:?usage: benchmarks/device_full_story.sh OUTDIR}"
mkdir -p "$FINAL"; FINAL="$(cd "$FINAL" && pwd)"
WORK="$(mktemp -d)"
OUT="$WORK/results"; mkdir -p "$OUT"
pack() { tar -C "$WORK" -czf "$FINAL/story.tar.gz" results; cp "$OUT/system-improve.md" "$FINAL/" 2>/dev/null; }
trap pack EXIT
PY="${PYTHON:-python3}"
PORT="${PORT:-18000}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export XDG_STATE_HOME="$OUT/state" XDG_CACHE_HOME="$WORK/cache"
step() { printf '\n=== %s === %s\n' "$*" "$(date +%T)"; }
run() { echo "+ $*"; "$@"; local rc=$?; echo "(exit $rc)"; return $rc; }

step "install (README's command, offline: wheels carried in .whl)"
if [ -n "${RIGAUDIT_BIN:-}" ]; then  # an installed rigaudit (local dry runs)
  RIG=("$RIGAUDIT_BIN"); PYV="$(dirname "$RIGAUDIT_BIN")/python"
elif "$PY" -m venv "$WORK/venv" && \
   "$PY" -c "import site; print(site.getsitepackages()[0])" > "$("$WORK/venv/bin/python" -c "import site; print(site.getsitepackages()[0])")/zz-parent-env.pth" && \
   "$WORK/venv/bin/pip" install -q --no-index --find-links .whl --no-build-isolation . ; then
  # python3 there is itself a venv (torch lives in it): the .pth file above makes its packages visible after ours
  RIG=("$WORK/venv/bin/rigaudit"); PYV="$WORK/venv/bin/python"
else
  echo "venv install failed; falling back to unpacked wheels on PYTHONPATH"
  DEPS="$WORK/site"; mkdir -p "$DEPS"
  for wheel in .whl/*.whl; do "$PY" -m zipfile -e "$wheel" "$DEPS"; done
  export PYTHONPATH="$PWD:$DEPS"; RIG=("$PY" -m rigaudit); PYV="$PY"
fi
run "${RIG[@]}" --version
nvidia-smi -L; nvidia-smi topo -m | head -6; uname -r; nproc

step "1. snapshot of this machine (kept as a test fixture)"
run "${RIG[@]}" snapshot -o "$WORK/snap" --notes "device machine, recorded by benchmarks/device_full_story.sh"
tar -C "$WORK" -czf "$FINAL/snapshot.tar.gz" snap

step "2. audit: live board in a pseudo-terminal, then report + JSON"
if command -v script >/dev/null; then
  TERM=xterm-256color COLUMNS=140 script -qec "${RIG[*]} audit --no-transcript --hide-ok" "$OUT/audit_tty.log" >/dev/null
  echo "(live board captured: $(wc -c <"$OUT/audit_tty.log") bytes)"
fi
START=$(date +%s.%N)
run "${RIG[@]}" audit --no-live --report "$OUT/system-improve.md" --json "$OUT/audit.json" --transcript "$OUT/audit.transcript.jsonl"
echo "audit wall time (process start included): $(echo "$(date +%s.%N) - $START" | bc 2>/dev/null || "$PY" -c "import sys;print(float(sys.argv[1])-float(sys.argv[2]))" "$(date +%s.%N)" "$START") s"

step "3. baseline inference benchmark against a tiny random Llama on GPU 0"
"$PYV" benchmarks/tiny_openai_server.py --port "$PORT" --device cuda:0 --config-out "$OUT/tiny_config.json" > "$OUT/tiny_server.log" 2>&1 &
SERVER=$!; trap 'kill "$SERVER" 2>/dev/null; pack' EXIT
for _ in $(seq 1 240); do grep -q "^ready on" "$OUT/tiny_server.log" 2>/dev/null && break; kill -0 "$SERVER" 2>/dev/null || break; sleep 0.5; done
tail -3 "$OUT/tiny_server.log"
BENCH=(--base-url "http://127.0.0.1:$PORT" --model tiny-llama --concurrency 1,4,16 --requests 24 --max-tokens 64
       --prompt-tokens 128 --repeat 3 --warmup 4 --yes)
run "${RIG[@]}" bench inference "${BENCH[@]}" --json "$OUT/inference_base.json" --report "$OUT/system-improve.md"

step "4. apply the runtime plan: kernel and CPU steps only (never a GPU setting), journaled"
if ! nvidia-smi -L >/dev/null 2>&1 && [ "${RIGAUDIT_STORY_APPLY:-}" != 1 ]; then
  echo "no GPU here: this is not the device machine, so no real kernel setting is changed (RIGAUDIT_STORY_APPLY=1 overrides)"
  exit 0
fi
ONLY=$("$PYV" - "$OUT/audit.json" <<'PYEOF'
import json, sys
plan = json.load(open(sys.argv[1]))["plan"]["steps"]
safe = []
for step in plan:
    kinds = {a["type"] for a in step["actions"]}
    paths = [p for a in step["actions"] if a["type"] == "sysfs_write" for p in a["paths"]]
    if step["kind"] == "runtime" and step["where"] == "host" and kinds <= {"sysctl", "sysfs_write"} and \
       all(p.startswith(("/sys/devices/system/cpu/", "/sys/kernel/mm/")) for p in paths) and kinds:
        safe.append(step["id"])
print(",".join(safe))
PYEOF
)
echo "runtime kernel/CPU steps in the plan: ${ONLY:-none}"
if [ -z "$ONLY" ]; then
  echo "the audit found no kernel/CPU runtime problem on this VM: demonstrating with a hand-made one-step plan (vm.swappiness -> 10)"
  "$PYV" - "$OUT/audit.json" "$WORK/plan.json" <<'PYEOF'
import json, sys
audit = json.load(open(sys.argv[1]))
audit["plan"] = {"steps": [{"id": "demo.swappiness", "check": "kernel.swappiness", "priority": "P2", "kind": "runtime",
    "where": "host", "title": "Lower vm.swappiness to 10 (demonstration step)",
    "actions": [{"type": "sysctl", "key": "vm.swappiness", "value": "10"}], "risk": "low",
    "verify": "cat /proc/sys/vm/swappiness shows 10", "revert": "sysctl -w vm.swappiness=<before>",
    "rationale": "demonstration of a real, reversible kernel setting"}]}
json.dump(audit, open(sys.argv[2], "w"))
PYEOF
  PLAN=(--plan "$WORK/plan.json"); ONLY="demo.swappiness"
else
  PLAN=(--plan "$OUT/audit.json")
fi
echo "before: swappiness=$(cat /proc/sys/vm/swappiness) numa_balancing=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null)"
echo "(no TTY and no --yes must refuse with exit 3:)"; "${RIG[@]}" apply "${PLAN[@]}" --only "$ONLY" --no-transcript </dev/null; echo "(exit $?)"
run "${RIG[@]}" apply "${PLAN[@]}" --only "$ONLY" --yes --journal "$OUT/journal.jsonl" --report "$OUT/system-improve.md" --emit-script "$OUT/elsewhere.sh" --transcript "$OUT/apply.transcript.jsonl"
echo "after: swappiness=$(cat /proc/sys/vm/swappiness) numa_balancing=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null)"

step "5. validate P2P (micro-benchmark + plain torch reference) and NCCL"
run "${RIG[@]}" bench p2p --yes --json "$OUT/p2p.json" --report "$OUT/system-improve.md"
run "$PYV" benchmarks/torch_reference.py peer --size-mib 256 --iters 20 --json "$OUT/ref_peer.json"
SIZES="1M,4M,16M,64M,256M,1G"
run "${RIG[@]}" bench nccl --tool torch --sizes "$SIZES" --iters 20 --yes --json "$OUT/nccl.json" --report "$OUT/system-improve.md"
run "$PYV" benchmarks/torch_reference.py allreduce --sizes "$SIZES" --iters 20 --json "$OUT/ref_nccl.json"

step "6. rerun the inference benchmark and compare with the baseline"
run "${RIG[@]}" bench inference "${BENCH[@]}" --json "$OUT/inference_after.json" --report "$OUT/system-improve.md"
run "${RIG[@]}" bench compare "$OUT/inference_base.json" "$OUT/inference_after.json" --report "$OUT/system-improve.md" --json "$OUT/compare.json"
cp "$OUT/inference_base.json" "$OUT/inference.json"; cp "$OUT/inference_after.json" "$OUT/inference2.json"
TOKS=$("$PYV" -c "import json,sys; r=[x for x in json.load(open(sys.argv[1]))['runs'] if x['concurrency']==1]; print(sum(x['output_tokens_per_s'] for x in r)/len(r))" "$OUT/inference_base.json")
kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null
run "${RIG[@]}" roofline --config "$OUT/tiny_config.json" --measure --gpus 1 --yes --measured-tok-s "$TOKS" --json "$OUT/roofline.json"
run "$PYV" benchmarks/inference_overhead.py --json "$OUT/overhead.json"

step "7. roll the change back, then re-audit (p2p.bandwidth now judged from the benchmark)"
run "${RIG[@]}" rollback "$OUT/journal.jsonl" --yes --transcript "$OUT/rollback.transcript.jsonl"
echo "restored: swappiness=$(cat /proc/sys/vm/swappiness) numa_balancing=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null)"
run "${RIG[@]}" audit --no-live --json "$OUT/audit_after.json" --no-transcript --hide-ok

step "8. figures"
"$PYV" benchmarks/story_check.py "$OUT"
mv "$OUT/state/rigaudit/journals" "$OUT/journals" 2>/dev/null; rm -rf "$OUT/state"
