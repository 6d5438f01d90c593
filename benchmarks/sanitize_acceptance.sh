#!/usr/bin/env bash
# Issue 20 on an H200: the sanitizer gate. One device call (PART=kernels and PART=fixtures split it in two
# when it would run past 10 minutes):
#   kernels   `kernelseek eval --sanitize-only` on the shipped Hopper kernel and on the seed: memcheck,
#             racecheck, initcheck and synccheck on the task's sanitizer suite, each tool's verdict and time
#   fixtures  tests/test_gpu_sanitize.py: the three fixtures of tests/faults.py (SANITIZER_WRAPPERS) are right
#             in value, each fails with its own tool's finding only, in one process that then passes the seed
# Every raw compute-sanitizer output lands under $OUT/sanitizer/ (<kernel or fixture>/<tool>.log, the
# program's own output beside it as <tool>.out): the recordings that replace the written ones in
# tests/fixtures/sanitizer/.
#
# Before the call, here (no GPU needed): `bash benchmarks/sanitize_acceptance.sh --prebuild` builds the two
# kernels and the three fixtures into .ks-cache (the builds are keyed by content and nvcc's version, so the
# device reuses them when its nvcc is the same). Device call:
#   bash benchmarks/sanitize_acceptance.sh            carry [".ks-cache"] (and ".whl-fa3/1", staged with
#                                                        ../shared/device/stage-wheels.sh, to check the
#                                                        fixtures' values against FA3; without it they are
#                                                        checked against the low-precision reference)
# TOOL_LIMIT (default 240) is each tool's time limit in seconds.
set -uo pipefail
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1 COLUMNS=200
KERNELS=("hopper=kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu" "seed=kernels/seeds/flash_attn_fwd.cu")
PY=${PY:-python3}

if [ "${1:-}" = "--prebuild" ]; then
  PY=${PY_HERE:-.venv/bin/python}
  [ -x "$PY" ] || PY=/work/main/.venv/bin/python
  "$PY" - <<'EOF'
import sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests")
from faults import SANITIZER_WRAPPERS, write_sanitizer_fault
from kernelseek.harness import build_kernel
folder = Path(tempfile.mkdtemp())
paths = ["kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu", "kernels/seeds/flash_attn_fwd.cu"]
paths += [write_sanitizer_fault(kind, folder)[0] for kind in sorted(SANITIZER_WRAPPERS)]
for path in paths:
    built = build_kernel(path, "sm90", entry_point="ks_flash_attn_fwd")
    print(f"{path}: {'cached' if built.cached else 'built'} {built.library}")
EOF
  du -sh .ks-cache
  exit $?
fi

START=$SECONDS; LIMIT=${LIMIT:-580}; TOOL_LIMIT=${TOOL_LIMIT:-240}; PART=${PART:-all}
left() { echo $((LIMIT - (SECONDS - START))); }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/sanitizer"
keep=$PYTHONPATH
source benchmarks/harness_wheels.sh || exit 1
export PYTHONPATH=$keep:$PYTHONPATH
$PY - <<'EOF'
from kernelseek.harness.sanitize import _version, find_sanitizer, sanitize_problem
found = find_sanitizer()
print("compute-sanitizer:", _version(found) if found else "NOT FOUND", "|", sanitize_problem("sm90") or "usable for sm90")
EOF

if [ "$PART" = all ] || [ "$PART" = kernels ]; then
  for pair in "${KERNELS[@]}"; do
    name=${pair%%=*}; kernel=${pair#*=}
    if [ "$(left)" -lt 60 ]; then echo "$name: skipped, $(left) s left"; continue; fi
    t0=$SECONDS
    timeout $(( $(left) - 20 )) $PY -m kernelseek eval "$kernel" --arch sm90 --sanitize-only \
        --sanitize-timeout "$TOOL_LIMIT" --sanitize-logs "$OUT/sanitizer/$name" --out "$OUT/sanitizer-$name.json" \
        > "$OUT/sanitizer-$name.txt" 2>&1
    echo "== $name ($kernel): rc=$? in $((SECONDS - t0)) s"; cat "$OUT/sanitizer-$name.txt"
  done
fi

if [ "$PART" = all ] || [ "$PART" = fixtures ]; then
  if [ "$(left)" -lt 90 ]; then echo "fixtures: skipped, $(left) s left (run PART=fixtures in its own call)"; exit 1; fi
  t0=$SECONDS
  KERNELSEEK_SANITIZER_LOGS=$OUT/sanitizer/fixtures timeout $(( $(left) - 10 )) $PY -m pytest -q -s -m gpu \
      tests/test_gpu_sanitize.py -p no:cacheprovider > "$OUT/pytest-gpu-sanitize.log" 2>&1
  echo "== fixtures: pytest rc=$? in $((SECONDS - t0)) s"; grep -E "^(smem_|uninit_)|passed|failed|Error" "$OUT/pytest-gpu-sanitize.log" | tail -30
fi
