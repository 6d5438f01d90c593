#!/usr/bin/env bash
# Issue 16's H200 check, in one device call: `kernelseek eval` of two candidates judged alone (no Ray), then
# through Ray with --parallel 1 (Ray's local cluster on the H200, one GPU per judgement), and the two verdicts
# compared kernel by kernel: correct or not, and which scenarios were correct, must be the same; the speedups
# are printed side by side (timings differ run to run, so they are shown, not compared). Exit 0 when the
# verdicts agree. Reports: $OUT/alone/*.json, $OUT/ray/*.json, $OUT/ray_eval_check.txt.
#   bash evals/device/ray_eval_check.sh [KERNEL_A KERNEL_B]   (default: the seed and the shipped Hopper kernel)
# Before the call, here (Ray's wheel is 79 MB, so it is staged in two folders; Ray's dependencies that the H200
# image lacks are jsonschema, jsonschema-specifications, referencing and rpds-py):
#   ../shared/device/stage-wheels.sh --no-deps --dir .whl-ray ray==2.60.0 jsonschema jsonschema-specifications \
#       referencing rpds-py
# Device call 1, carry [".whl-ray/1"]: mkdir -p /root/kswheels && cp .whl-ray/1/* /root/kswheels/
# Device call 2, carry [".whl-ray/2"] (and ".whl-fa3/1" if staged, to time against FA3): bash evals/device/ray_eval_check.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -d .whl-fa3/1 ]; then mkdir -p /root/kswheels && cp .whl-fa3/1/*.whl /root/kswheels/; fi
if ! python3 -c "import ray" 2>/dev/null; then
  installer=$(ls .whl-ray/*/install-wheels.sh 2>/dev/null | head -1)
  [ -n "$installer" ] || { echo "Ray is not importable and no .whl-ray/*/install-wheels.sh was carried; stage it (see the top of this script)"; exit 2; }
  line=$(bash "$installer") || { echo "installing the staged wheels failed"; exit 2; }
  eval "$line"
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1 COLUMNS=160
python3 -c "import ray; print('ray', ray.__version__)" || exit 2
if [ $# -ge 2 ]; then A=$1; B=$2
else  # the seed and the shipped kernel share a file name, and eval --out keys reports by it
  mkdir -p /tmp/ks-ray-check; A=/tmp/ks-ray-check/seed_fa.cu; B=/tmp/ks-ray-check/hopper_fa.cu
  cp kernels/seeds/flash_attn_fwd.cu "$A"; cp kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu "$B"; fi
common=(eval "$A" "$B" --arch "${ARCH:-sm90}" --quick --seed 1)   # ARCH=cpu: the same check on the CPU task
echo "== alone: kernelseek ${common[*]}"
timeout 270 python3 -m kernelseek "${common[@]}" --out "$OUT/alone" > "$OUT/alone.log" 2>&1; echo "rc=$?"
tail -8 "$OUT/alone.log"
echo "== through Ray: kernelseek ${common[*]} --parallel 1"
timeout 270 python3 -m kernelseek "${common[@]}" --parallel 1 --out "$OUT/ray" > "$OUT/ray.log" 2>&1; echo "rc=$?"
grep -E "Ray cluster|judging on" "$OUT/ray.log" | head -4; tail -8 "$OUT/ray.log"
python3 - "$OUT" "$A" "$B" <<'PY' | tee "$OUT/ray_eval_check.txt"
import json, sys
from pathlib import Path
out, kernels = Path(sys.argv[1]), sys.argv[2:]
same = True
for kernel in kernels:
    name = Path(kernel).stem
    try:
        a, r = (json.loads((out / d / f"{name}.json").read_text()) for d in ("alone", "ray"))
    except (OSError, ValueError) as error:
        print(f"{kernel}: no report to compare ({error})"); same = False; continue
    scen = lambda j: [(s["scenario"], bool(s.get("correct"))) for s in j["scenarios"]]
    agree = a["correct"] == r["correct"] and scen(a) == scen(r)
    same &= agree
    print(f"{kernel}: alone {'CORRECT' if a['correct'] else 'INCORRECT'} {a['speedup']} on {a['device'].get('name')}"
          f" · Ray {'CORRECT' if r['correct'] else 'INCORRECT'} {r['speedup']} on {r['device'].get('name')}"
          f" · {'same verdict' if agree else 'DIFFERENT verdicts'}")
    for (s, c), (_, d) in zip(scen(a), scen(r)):
        if c != d:
            print(f"  {s}: alone {'correct' if c else 'wrong'}, Ray {'correct' if d else 'wrong'}")
print("verdicts agree" if same else "verdicts DIFFER")
sys.exit(0 if same else 1)
PY
