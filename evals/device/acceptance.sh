#!/usr/bin/env bash
# Everything the open issues still need from an H200, in ONE device call (about 6-8 minutes):
#   the seed and the shipped Hopper kernel judged on the full sm90 suite (issue 2, issue 5), the v4
#   candidate judged, compute-sanitizer on small scenarios of every feature (issue 5), the GPU tests.
# Before the call, here:
#   ../shared/device/stage-wheels.sh --no-deps --dir .whl-fa3 fa3-fwd==0.0.3
#   patch -o kernels/hopper/v4.cu kernels/hopper/flash_attn_fwd.cu kernels/hopper/versions/v4_one_cta_per_uneven_tile.patch
#   KERNELSEEK_CACHE=$PWD/.ks-cache .venv/bin/kernelseek eval FILE --arch sm90 --compile-only   (for each kernel)
# Device call: run `bash evals/device/acceptance.sh` carrying [".whl-fa3/1", ".ks-cache"]; results in $OUT.
set -uo pipefail
eval "$(bash .whl-fa3/1/install-wheels.sh)"
export PYTHONPATH=$PWD:${PYTHONPATH:-} KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" evals/results
judge() {  # name kernel [flags]
  local name=$1 kernel=$2; shift 2; SECONDS=0
  timeout 300 python3 -m kernelseek eval "$kernel" --arch sm90 "$@" --out "evals/results/$name.json" > "$OUT/$name.log" 2>&1
  echo "$name: rc=$? ${SECONDS}s"; tail -4 "$OUT/$name.log"; cp "evals/results/$name.json" "$OUT/" 2>/dev/null
}
judge seed-sm90-full kernels/seeds/flash_attn_fwd.cu
judge hopper-sm90-full kernels/hopper/flash_attn_fwd.cu
judge hopper-sm90-quick kernels/hopper/flash_attn_fwd.cu --quick
[ -f kernels/hopper/v4.cu ] && judge hopper-v4-sm90-full kernels/hopper/v4.cu
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --print-limit 20 python3 evals/device/sanitize.py \
      kernels/hopper/flash_attn_fwd.cu > "$OUT/sanitizer-$tool.log" 2>&1
  echo "sanitizer $tool: rc=$?"; tail -3 "$OUT/sanitizer-$tool.log"
done
timeout 240 python3 -m pytest -q -m gpu tests/test_gpu_harness.py -p no:cacheprovider 2>&1 | tail -5
