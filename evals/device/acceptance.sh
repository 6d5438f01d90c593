#!/usr/bin/env bash
# The judgements the open issues need from an H200, in ONE device call (under 10 minutes):
#   the seed on the full sm90 suite (issue 2); the Hopper candidates, newest first, on the full suite
#   (issue 5); the shipped v3 only if no newer candidate was correct everywhere; memcheck on the newest.
# Before the call, here:
#   ../shared/device/stage-wheels.sh --no-deps --dir .whl-fa3 fa3-fwd==0.0.3
#   for v in v4_one_cta_per_uneven_tile v6_softcap_tanh_approx; do
#     patch -o kernels/hopper/${v%%_*}.cu kernels/hopper/flash_attn_fwd.cu kernels/hopper/versions/$v.patch; done
#   KERNELSEEK_CACHE=$PWD/.ks-cache .venv/bin/kernelseek eval FILE --arch sm90 --compile-only   (each kernel)
# Device call: `bash evals/device/acceptance.sh`, carrying .whl-fa3/1 and the kernels' .ks-cache/build/* folders.
# With the agent stack staged in the same call (evals/device/loop_session.sh says how), it is installed too.
set -uo pipefail
START=$SECONDS; LIMIT=${LIMIT:-570}
left() { echo $((LIMIT - (SECONDS - START))); }
mkdir -p /root/kswheels && cp .whl-fa3/1/*.whl /root/kswheels/
installer=$(ls .whl-agent/*/install-wheels.sh 2>/dev/null | head -1); installer=${installer:-.whl-fa3/1/install-wheels.sh}
if ! line=$(bash "$installer"); then  # the agent stack failed to install: FA3 alone still serves the judge
  python3 -m pip install -q --no-index --no-deps --target /tmp/ks-fa3 .whl-fa3/1/*.whl || exit 1
  line="export PYTHONPATH=/tmp/ks-fa3"
fi
eval "$line"
echo "$PYTHONPATH" > /tmp/ks-pythonpath   # a later call on the same warm machine reuses the install
export PYTHONPATH=$PWD:${PYTHONPATH:-} KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs" evals/results
judge() {  # name kernel [flags]: a full (or --quick) judgement, JSON under evals/results/
  local name=$1 kernel=$2; shift 2
  local budget; budget=$(( $(left) - 10 )); [ "$budget" -gt 300 ] && budget=300
  if [ "$budget" -lt 90 ]; then echo "$name: skipped, ${budget}s left"; return 1; fi
  local t0=$SECONDS
  timeout "$budget" python3 -m kernelseek eval "$kernel" --arch sm90 "$@" --out "evals/results/$name.json" \
      > "$OUT/logs/$name.log" 2>&1
  echo "$name: rc=$? $((SECONDS - t0))s"; tail -3 "$OUT/logs/$name.log"
  cp "evals/results/$name.json" "$OUT/" 2>/dev/null
}
all_correct() { python3 -c "import json,sys; sys.exit(0 if json.load(open('$1'))['correct'] else 1)" 2>/dev/null; }

judge seed-sm90-full kernels/seeds/flash_attn_fwd.cu
shipped_ok=0
for v in v6 v4; do
  [ -f kernels/hopper/$v.cu ] || continue
  judge hopper-flash_attn_fwd-$v-sm90-full kernels/hopper/$v.cu
  all_correct "evals/results/hopper-flash_attn_fwd-$v-sm90-full.json" && shipped_ok=1
done
[ $shipped_ok = 1 ] || judge hopper-flash_attn_fwd-v3-sm90-full kernels/hopper/flash_attn_fwd.cu
newest=$(ls kernels/hopper/v6.cu kernels/hopper/v4.cu kernels/hopper/flash_attn_fwd.cu 2>/dev/null | head -1)
if [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 15 )) compute-sanitizer --tool memcheck --print-limit 20 python3 evals/device/sanitize.py \
      "$newest" > "$OUT/logs/sanitizer-memcheck-$(basename "$newest" .cu).log" 2>&1
  echo "memcheck $newest: rc=$?"; tail -3 "$OUT/logs/sanitizer-memcheck-$(basename "$newest" .cu).log"
fi
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
