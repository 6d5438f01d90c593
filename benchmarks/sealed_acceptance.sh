#!/usr/bin/env bash
# The sealed judge on the GPU, in two device calls (each part takes 6-7 minutes on an H100): its GPU tests (the cheats of tests/test_gpu_cheats.py and
# the fault fixtures of tests/test_gpu_harness.py), then the shipped kernels' full judgements beside their
# last recorded ones: flash_attn_fwd and add_rmsnorm with the hold-outs and seeds of those judgements (s2, s1).
#   PART=tests bash benchmarks/sealed_acceptance.sh    # the tests only
#   PART=judge bash benchmarks/sealed_acceptance.sh    # the judgements only
#   TESTS=tests/test_gpu_cheats.py KERNELS=flash_attn_fwd bash benchmarks/sealed_acceptance.sh  # a part of each
# Before the call, here: stage FA3 and the harness's wheels (benchmarks/harness_wheels.sh says how), build
# the kernels into .ks-cache (`kernelseek eval K --arch sm90 --compile-only`), `tar -cJf .ks-cache.tar.xz
# .ks-cache`, and carry [".whl-fa3/1", ".whl-harness/1", ".ks-cache.tar.xz"]. JSONs and logs come back in $OUT.
set -uo pipefail
source benchmarks/harness_wheels.sh || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -f .ks-cache.tar.xz ] && [ ! -d .ks-cache ]; then tar -xJf .ks-cache.tar.xz; fi
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
if [ "${PART:-all}" != judge ]; then
  # -v: a run cut by the call's limit still says which tests passed (28 tests; 17 passed in 330 s on an H100)
  # shellcheck disable=SC2086 - one argument a test file
  timeout "${TESTS_TIMEOUT:-560}" python3 -m pytest -v -p no:cacheprovider ${TESTS:-tests/test_gpu_cheats.py tests/test_gpu_harness.py} 2>&1 \
    | tee "$OUT/gpu-tests.log" | tail -25
fi
if [ "${PART:-all}" != tests ]; then
  for job in "flash_attn_fwd-sealed-holdout24-s2=kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu --holdout 24 --seed 2" \
             "add_rmsnorm-sealed-holdout24-s1=kernels/hopper/add_rmsnorm/add_rmsnorm.cu --holdout 24 --seed 1"; do
    name=${job%%=*}; read -ra args <<< "${job#*=}"
    case "$name" in "${KERNELS:-}"*) ;; *) continue ;; esac
    t0=$SECONDS
    timeout 250 python3 -m kernelseek eval "${args[@]}" --arch sm90 --out "$OUT/$name.json" > "$OUT/$name.log" 2>&1
    echo "$name: rc=$? $((SECONDS - t0)) s"; grep -E "CORRECT|group |hold-out|✗" "$OUT/$name.log" | head -20
  done
fi
