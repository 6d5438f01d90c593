#!/usr/bin/env bash
# Judge Hopper candidates on an H200 in one device call, newest idea first; then the sanitizer gate
# (kernelseek eval --sanitize-only: memcheck, racecheck, initcheck, synccheck) on the first one (or on
# each kernel of $SANITIZE, space-separated). Each argument is NAME=KERNEL (the full suite, JSON to
# benchmarks/results/NAME.json) or NAME=KERNEL@GLOB (only the scenarios matching GLOB, no beside baselines:
# an exploration, not a result).
#   bash benchmarks/judge_candidates.sh hopper-flash_attn_fwd-v7-sm90-full=kernels/hopper/v7.cu \
#        v7all-causal=kernels/hopper/v7all.cu@'*causal*'
# EVAL_FLAGS adds flags to every full judgement (e.g. EVAL_FLAGS="--holdout 24 --seed 1"), SUBSET_FLAGS
# to every @GLOB one (e.g. SUBSET_FLAGS="--holdout 24 --holdout-seed 7": the hold-out comes whole);
# SANITIZE=none skips the sanitizers and keeps no time back for them. Each JSON comes back in $OUT
# beside logs.tgz, or, past six of them (a call returns at most 8 files), packed in $OUT/results.tgz.
# Before the call, here: stage FA3 and pydantic (benchmarks/harness_wheels.sh says how) and prebuild
# each kernel into .ks-cache (KERNELSEEK_CACHE=$PWD/.ks-cache kernelseek eval K --arch sm90 --compile-only),
# then `tar -cJf .ks-cache.tar.xz .ks-cache` (a build of the attention kernel is ~10 MB, a dozen exceed a
# call's 64 MiB; packed, 0.4-0.7 MB each); carry [".whl-fa3/1", ".whl-harness/1"]. Candidate files and the
# .tar.xz are untracked (not ignored): they travel. Whatever is not in the cache is built here first, all
# kernels at once (a build takes ~15 s of one core; the machine has 16).
set -uo pipefail
START=$SECONDS; LIMIT=${LIMIT:-570}
left() { echo $((LIMIT - (SECONDS - START))); }
source benchmarks/harness_wheels.sh || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs" benchmarks/results
if [ -f .ks-cache.tar.xz ] && [ ! -d .ks-cache ]; then tar -xJf .ks-cache.tar.xz; fi
for arg in "$@" ${SANITIZE:+$(printf "x=%s " $SANITIZE)}; do
  spec=${arg#*=}; [ "$spec" = none ] && continue
  python3 -m kernelseek eval "${spec%%@*}" --arch sm90 --compile-only > /dev/null 2>&1 &
done
wait; echo "builds ready: $((SECONDS - START))s"
first=${SANITIZE:-}  # the gate's time is kept back from the judgements, none where it is skipped
if [ "$first" = none ]; then gate_reserve=0; else gate_reserve=$(( 20 + 45 * $(wc -w <<< "${SANITIZE:-x}") )); fi
for arg in "$@"; do
  name=${arg%%=*}; spec=${arg#*=}; kernel=${spec%%@*}; flags=()
  if [ "$spec" != "$kernel" ]; then flags=(--scenarios "${spec#*@}"); read -ra more <<< "${SUBSET_FLAGS:-}"; flags+=("${more[@]}"); else read -ra flags <<< "${EVAL_FLAGS:-}"; fi
  first=${first:-$kernel}
  budget=$(( $(left) - gate_reserve )); [ "$budget" -gt 240 ] && budget=240
  if [ "$budget" -lt 40 ]; then echo "$name: skipped, $(left)s left"; continue; fi
  t0=$SECONDS
  timeout "$budget" python3 -m kernelseek eval "$kernel" --arch sm90 "${flags[@]}" --out "benchmarks/results/$name.json" \
      > "$OUT/logs/$name.log" 2>&1
  echo "$name: rc=$? $((SECONDS - t0))s"; tail -2 "$OUT/logs/$name.log"
  cp "benchmarks/results/$name.json" "$OUT/" 2>/dev/null
done
# SANITIZE may name several kernels (space-separated): each gets an equal share of the time left.
gates=(${first}); n_left=${#gates[@]}
for kernel in "${gates[@]}"; do
  [ "$kernel" = none ] && break
  share=$(( ($(left) - 10) / n_left )); n_left=$((n_left - 1))
  if [ "$share" -lt 50 ]; then echo "sanitizer $kernel: skipped, $(left)s left"; continue; fi
  tag=$(basename "${kernel%.*}")
  timeout "$share" python3 -m kernelseek eval "$kernel" --arch sm90 --sanitize-only \
      --sanitize-timeout $(( (share - 10) / 4 )) --sanitize-logs "$OUT/logs/sanitizer-$tag" \
      > "$OUT/logs/sanitizer-$tag.txt" 2>&1
  echo "sanitizer $kernel: rc=$?"; tail -8 "$OUT/logs/sanitizer-$tag.txt"
done
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
# A device call brings back at most 8 files: past 6 judgements, the JSONs come back as one results.tgz.
jsons=("$OUT"/*.json)
if [ "${#jsons[@]}" -gt 6 ]; then
  tar -C "$OUT" -czf "$OUT/results.tgz" "${jsons[@]##*/}" && rm -f "${jsons[@]}"
  echo "${#jsons[@]} judgements in results.tgz"
fi
