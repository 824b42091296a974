#!/usr/bin/env bash
# The benchmark story on a GPU machine (2 x H200 expected), in one run; every JSON result under OUTDIR.
#
#   usage: benchmarks/device_story.sh OUTDIR [WHEELHOUSE]
#
# 1. P2P:  rigaudit bench p2p, and a plain torch peer copy in the same run (target: >= 95% of it)
# 2. NCCL: rigaudit bench nccl 1 MiB..1 GiB (NCCL_NVLS_ENABLE=0), and a plain torch.distributed loop (target: within 5%)
# 3. Inference: the client's own overhead and accuracy against the fake server (targets: < 1 ms, ITL within 5%);
#    then a tiny random transformers model served on GPU 0 (benchmarks/tiny_openai_server.py), benchmarked
#    twice with rigaudit bench inference, and the two runs compared
# 4. Roofline of the tiny model with measured bandwidth, against its single-stream speed
# 5. benchmarks/story_check.py prints every figure with PASS/FAIL
#
# rigaudit's dependencies (pydantic, anyio, rich, openai, nvidia-ml-py) are taken from the machine when
# importable, else unpacked from WHEELHOUSE (default .whl, made here by benchmarks/make_wheelhouse.sh:
# carry ".whl"). torch and transformers must be on the machine. Nothing is downloaded.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: benchmarks/device_story.sh OUTDIR [WHEELHOUSE]}"
WHEELS="${2:-.whl}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
PY="${PYTHON:-python3}"
PORT="${PORT:-18000}"
step() { printf '\n=== %s ===\n' "$*"; }
run() { echo "+ $*"; "$@"; echo "(exit $?)"; }

step "environment"
if ! "$PY" -c "import pydantic, anyio, rich, pynvml, openai" 2>/dev/null; then
  if [ ! -d "$WHEELS" ]; then
    echo "rigaudit's dependencies are missing and there is no wheelhouse at $WHEELS (run benchmarks/make_wheelhouse.sh and carry it)"
    exit 2
  fi
  DEPS="$(mktemp -d)/site"
  mkdir -p "$DEPS"
  for wheel in "$WHEELS"/*.whl; do "$PY" -m zipfile -e "$wheel" "$DEPS"; done
  export PYTHONPATH="$DEPS${PYTHONPATH:+:$PYTHONPATH}"
  echo "dependencies unpacked from $WHEELS into $DEPS"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
RIG=("$PY" -m rigaudit)
"$PY" - <<'PYEOF'
import platform, sys
print("python", sys.version.split()[0], platform.machine())
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(),
          [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
    print("nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None)
except Exception as exc:
    print("torch unavailable:", exc)
import pydantic, rich, anyio
print("pydantic", pydantic.VERSION, "anyio", anyio.__version__ if hasattr(anyio, "__version__") else "?")
PYEOF
nvidia-smi -L 2>/dev/null; nvidia-smi topo -m 2>/dev/null | head -8
run "${RIG[@]}" --version

step "1. P2P micro-benchmark (rigaudit), then a plain torch peer copy"
run "${RIG[@]}" bench p2p --yes --json "$OUT/p2p.json" --save-to "$OUT/p2p-for-audit.json"
run "$PY" benchmarks/torch_reference.py peer --size-mib 256 --iters 20 --json "$OUT/ref_peer.json"

step "2. NCCL all-reduce (rigaudit, torch.distributed), then a plain torch.distributed loop"
SIZES="1M,4M,16M,64M,256M,1G"
run "${RIG[@]}" bench nccl --tool torch --sizes "$SIZES" --iters 20 --yes --json "$OUT/nccl.json"
run "$PY" benchmarks/torch_reference.py allreduce --sizes "$SIZES" --iters 20 --json "$OUT/ref_nccl.json"

step "3a. inference benchmark: own overhead and accuracy against the fake server"
run "$PY" benchmarks/inference_overhead.py --json "$OUT/overhead.json"

step "3b. tiny random Llama on GPU 0, served OpenAI-style on 127.0.0.1:$PORT"
"$PY" benchmarks/tiny_openai_server.py --port "$PORT" --device cuda:0 --config-out "$OUT/tiny_config.json" \
  > "$OUT/tiny_server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null' EXIT
for _ in $(seq 1 240); do
  grep -q "^ready on" "$OUT/tiny_server.log" 2>/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || break
  sleep 0.5
done
cat "$OUT/tiny_server.log" | tail -5
if grep -q "^ready on" "$OUT/tiny_server.log"; then
  BENCH=(--base-url "http://127.0.0.1:$PORT" --model tiny-llama --concurrency 1,4,16 --requests 16 --max-tokens 64
         --prompt-tokens 128 --repeat 3 --warmup 4 --yes)
  run "${RIG[@]}" bench inference "${BENCH[@]}" --json "$OUT/inference.json"
  echo "(the same run again, nothing changed: an A/A test of bench compare, which should find no significant change)"
  run "${RIG[@]}" bench inference "${BENCH[@]}" --json "$OUT/inference2.json"
  run "${RIG[@]}" bench compare "$OUT/inference.json" "$OUT/inference2.json" --json "$OUT/compare.json" --report "$OUT/system-improve.md"
  TOKS=$("$PY" -c "import json,sys; r=[x for x in json.load(open(sys.argv[1]))['runs'] if x['concurrency']==1]; print(sum(x['output_tokens_per_s'] for x in r)/len(r))" "$OUT/inference.json")
  kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null
  step "4. roofline of the tiny model (bandwidth measured on GPU 0), single stream measured at $TOKS tok/s"
  run "${RIG[@]}" roofline --config "$OUT/tiny_config.json" --measure --gpus 1 --yes --measured-tok-s "$TOKS" --json "$OUT/roofline.json"
else
  echo "the tiny server did not come up; see $OUT/tiny_server.log"
  kill "$SERVER" 2>/dev/null
fi

step "5. figures"
"$PY" benchmarks/story_check.py "$OUT"
