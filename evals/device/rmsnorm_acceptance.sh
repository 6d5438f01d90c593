#!/usr/bin/env bash
# Issue 18 on an H200: the add_rmsnorm task end to end.
#   judge:   the seed and the tuned kernel on the full sm90 suite plus a hold-out (`--holdout $HOLDOUT
#            --seed 1`; HOLDOUT is 24 for `judge`, 0 for `all`), JSONs to evals/results/ and $OUT, and
#            their summary against the bars (evals/device/rmsnorm_summary.py): ~3-6 minutes,
#            torch alone (no FA3).
#   session: a scripted `kernelseek run add_rmsnorm --arch sm90`: the seed, then a wrong candidate (the
#            seed without its weight), "done" (a question from the bank), then the tuned kernel, which
#            must be made the best after its full judgement; checked from its trace, which is kept:
#            ~5-7 minutes (each full judgement also runs the sanitizer gate: four tools over 16 small
#            scenarios), so give it a call of its own with LIMIT=570; needs the agent stack (langgraph, litellm).
# Usage: bash evals/device/rmsnorm_acceptance.sh [judge|session|all]   (default all; LIMIT=seconds, 570)
# Best as two device calls on one warm machine: `... judge`, then `... session` (each under 10 minutes);
# `all` fits both into one call only if the judgements are quick.
# Before the call, here (the agent stack, only for the session):
#   ../shared/device/stage-wheels.sh --dir .whl-agent langgraph langgraph-checkpoint-sqlite 'litellm==1.110.2'
# and carry [".whl-agent/1", ...] (every folder it made, if they fit in 64 MiB; else copy the first ones
# to /root/kswheels in calls before, as loop_session.sh says). A machine where acceptance.sh or this
# script installed them already (/tmp/ks-pythonpath) needs nothing carried. Carrying ".ks-cache" with
# the kernels prebuilt (`KERNELSEEK_CACHE=$PWD/.ks-cache kernelseek eval K --arch sm90 --compile-only`)
# saves their builds; nvcc builds them there otherwise.
set -uo pipefail
START=$SECONDS; LIMIT=${LIMIT:-570}; PART=${1:-all}
case "$PART" in judge|session|all) ;; *) echo "usage: $0 [judge|session|all]"; exit 2;; esac
if [ "$PART" = all ]; then HOLDOUT=${HOLDOUT:-0}; else HOLDOUT=${HOLDOUT:-24}; fi
left() { echo $((LIMIT - (SECONDS - START))); }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs" evals/results
if [ ! -f /tmp/ks-pythonpath ] && ls .whl-agent/*/install-wheels.sh > /dev/null 2>&1; then
  mkdir -p /root/kswheels && cp .whl-agent/*/* /root/kswheels/ 2>/dev/null
  if line=$(bash "$(ls .whl-agent/*/install-wheels.sh | tail -1)"); then
    eval "$line"; echo "$PYTHONPATH" > /tmp/ks-pythonpath
  else echo "the agent stack did not install: the session cannot run"; fi
fi
source evals/device/harness_wheels.sh || exit 1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/ks-inductor}  # every judging child reuses compilations
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0))"

if [ "$PART" != session ]; then
  for pair in seed=kernels/seeds/add_rmsnorm.cu hopper=kernels/hopper/add_rmsnorm/add_rmsnorm.cu; do
    name=add_rmsnorm-${pair%%=*}-sm90-full; kernel=${pair#*=}
    budget=$(( $(left) - 30 )); [ "$budget" -gt 280 ] && budget=280
    [ "$PART" = all ] && [ "$budget" -gt 200 ] && budget=200
    if [ "$budget" -lt 60 ]; then echo "$name: skipped, $(left)s left"; continue; fi
    t0=$SECONDS
    timeout "$budget" python3 -m kernelseek eval "$kernel" --arch sm90 --holdout "$HOLDOUT" --seed 1 \
        --out "evals/results/$name.json" > "$OUT/logs/$name.log" 2>&1
    echo "$name: rc=$? $((SECONDS - t0))s"; tail -3 "$OUT/logs/$name.log"
    cp "evals/results/$name.json" "$OUT/" 2>/dev/null
  done
  python3 evals/device/rmsnorm_summary.py evals/results/add_rmsnorm-*-sm90-full.json 2>&1 | tee "$OUT/summary.txt"
fi

if [ "$PART" != judge ]; then
  if ! python3 -c "import langgraph, litellm" 2>/dev/null; then
    echo "session: skipped, the agent stack is not installed (carry .whl-agent)" | tee -a "$OUT/summary.txt"
  else
    wrong=/tmp/add_rmsnorm_without_weight.cu
    sed 's/h \* scale \* __bfloat162float(weight\[c\])/h * scale/' kernels/seeds/add_rmsnorm.cu > $wrong
    cmp -s $wrong kernels/seeds/add_rmsnorm.cu && { echo "the wrong variant did not change the seed"; exit 1; }
    # a last "done" answers the step after the faster one if the target gain was not met (--max-steps 4 ends it)
    python3 -m kernelseek.models.scripted add_rmsnorm.cu $wrong :done kernels/hopper/add_rmsnorm/add_rmsnorm.cu :done > /tmp/rms-script.json
    confine=(); command -v bwrap > /dev/null || confine=(--unconfined)  # the image has no bubblewrap
    rm -rf runs/rms-scripted; t0=$SECONDS
    timeout $(( $(left) - 25 )) python3 -m kernelseek run add_rmsnorm --arch sm90 --model scripted//tmp/rms-script.json \
        --mode auto --target-gain 1.3 --max-steps 4 --runs-dir runs --run-id rms-scripted "${confine[@]}" \
        > "$OUT/logs/run.log" 2>&1
    echo "run: rc=$? $((SECONDS - t0))s"; tail -5 "$OUT/logs/run.log"
    python3 -m kernelseek trace show rms-scripted --runs-dir runs > "$OUT/logs/trace-show.txt" 2>&1
    tail -30 "$OUT/logs/trace-show.txt"
    python3 evals/device/rmsnorm_session_check.py runs/rms-scripted 2>&1 | tee -a "$OUT/summary.txt"
    mkdir -p evals/results/add_rmsnorm_loop_h200
    cp runs/rms-scripted/trace.jsonl runs/rms-scripted/config.json "$OUT/logs/trace-show.txt" \
       evals/results/add_rmsnorm_loop_h200/ 2>/dev/null
    tar -C runs -czf "$OUT/run-rms-scripted.tgz" rms-scripted
  fi
fi
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
