#!/usr/bin/env bash
# Issue 3 on an H200: a scripted session of the question-driven loop on flash_attn_fwd, from the seed,
# with a broken candidate (the seed without its softmax scale) and a faster one (the shipped Hopper
# kernel); then the GPU tests and racecheck on the shipped kernel. One device call, right after
# evals/device/acceptance.sh on the same warm machine (it installed FA3 and the agent stack).
# The agent stack is staged here beforehand, and its first folder copied in its own call:
#   ../shared/device/stage-wheels.sh --dir .whl-agent langgraph langgraph-checkpoint-sqlite 'litellm==1.110.2'
#   call 1, carry [".whl-agent/1"]: mkdir -p /root/kswheels && cp .whl-agent/1/* /root/kswheels/
#   call 2, carry [".whl-agent/2", ".whl-fa3/1", ".ks-cache/build/..."]: bash evals/device/acceptance.sh
#   call 3, carry [".ks-cache"]: bash evals/device/loop_session.sh
set -uo pipefail
[ -f /tmp/ks-pythonpath ] || { echo "no install from acceptance.sh on this machine: run it first"; exit 1; }
export PYTHONPATH=$PWD:$(cat /tmp/ks-pythonpath) KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"

sed 's/float x = wS\[r \* L::LDS + c\] \* p.scale;/float x = wS[r * L::LDS + c];/' \
    kernels/seeds/flash_attn_fwd.cu > /tmp/broken.cu
cmp -s /tmp/broken.cu kernels/seeds/flash_attn_fwd.cu && { echo "the broken variant did not change the seed"; exit 1; }
python3 -m kernelseek.models.scripted flash_attn_fwd.cu /tmp/broken.cu :done kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu \
    > /tmp/h200-script.json
t0=$SECONDS
timeout 300 python3 -m kernelseek run flash_attn_fwd --arch sm90 --model scripted//tmp/h200-script.json \
    --mode auto --target-gain 1.5 --max-steps 4 --run-id h200-scripted > "$OUT/run.log" 2>&1
echo "run: rc=$? $((SECONDS - t0))s"; tail -5 "$OUT/run.log"
python3 -m kernelseek trace show h200-scripted > "$OUT/trace-show.txt" 2>&1; tail -40 "$OUT/trace-show.txt"
tar -C runs -czf "$OUT/run-h200-scripted.tgz" h200-scripted

t0=$SECONDS
timeout 200 python3 -m pytest -q -m gpu tests/test_gpu_harness.py -p no:cacheprovider > "$OUT/pytest-gpu.log" 2>&1
echo "pytest gpu: rc=$? $((SECONDS - t0))s"; tail -4 "$OUT/pytest-gpu.log"

timeout 200 python3 -m kernelseek eval kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu --arch sm90 --sanitize-only \
    --sanitize-tools racecheck --sanitize-timeout 180 --sanitize-logs "$OUT/sanitizer" > "$OUT/sanitizer-racecheck.txt" 2>&1
echo "racecheck: rc=$?"; tail -4 "$OUT/sanitizer-racecheck.txt"
