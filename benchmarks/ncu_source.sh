#!/usr/bin/env bash
# Nsight Compute's full set, with stall reasons by SASS line, for one kernel and the task's baseline on
# each scenario, in one device call; the reports' text comes back as $OUT/ncu.tgz.
#   bash benchmarks/ncu_source.sh kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu grid_d128_s8192 grid_d64_s8192
# Per scenario and side (ours: OURS_RE, the baseline: BASE_RE, regexes of kernel names) it profiles the
# second launch (warm caches) and writes NAME-SIDE-details.txt (every section) and NAME-SIDE-sass.csv
# (per-instruction counters: executed instructions, stall reasons). Prebuild the kernel into
# .ks-cache as judge_candidates.sh says, carry the harness wheels.
set -uo pipefail
source benchmarks/harness_wheels.sh || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; dir=$OUT/ncu; mkdir -p "$dir"
if [ -f .ks-cache.tar.xz ] && [ ! -d .ks-cache ]; then tar -xJf .ks-cache.tar.xz; fi
kernel=$1; shift
OURS_RE=${OURS_RE:-fa_fwd_sm90}; BASE_RE=${BASE_RE:-device_kernel}
for scenario in "$@"; do
  tag=${scenario//:/_}
  for side in ours base; do
    re=$OURS_RE; [ "$side" = base ] && re=$BASE_RE
    rep=/tmp/$tag-$side
    timeout 240 ncu --set full --import-source yes --clock-control none --kernel-name "regex:$re" \
      --launch-skip 1 --launch-count 1 -f -o "$rep" \
      python3 benchmarks/profile_scenarios.py "$kernel" sm90 "$scenario" > "$dir/$tag-$side-run.log" 2>&1
    echo "$tag $side: rc=$?"
    ncu -i "$rep.ncu-rep" --page details > "$dir/$tag-$side-details.txt" 2>&1
    ncu -i "$rep.ncu-rep" --page source --print-source sass --csv > "$dir/$tag-$side-sass.csv" 2>&1
    head -c 300 "$dir/$tag-$side-sass.csv"; echo
  done
done
tar -C "$OUT" -czf "$OUT/ncu.tgz" ncu && rm -rf "$dir"
