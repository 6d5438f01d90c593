#!/usr/bin/env bash
# One device call that checks the judge on the H200: install FA3 (staged by
#   ../shared/device/stage-wheels.sh --no-deps --dir .whl-fa3 fa3-fwd==0.0.3),
# run the GPU tests (the seed, every fault fixture), then judge the seed quick and full against FA3.
# Carry [".whl-fa3/1", ".ks-cache"] (builds made here with KERNELSEEK_CACHE=.ks-cache). Results go to $OUT.
set -uo pipefail
eval "$(bash .whl-fa3/1/install-wheels.sh)"
export PYTHONPATH=$PWD:${PYTHONPATH:-} KERNELSEEK_CACHE=$PWD/.ks-cache PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
python3 -c "import fa3_fwd_interface, torch; print('fa3 importable; torch', torch.__version__)"
timeout 200 python3 -m pytest -q -m gpu tests/test_gpu_harness.py -p no:cacheprovider ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tail -25
for mode in quick full; do
  flag=$([ $mode = quick ] && echo --quick)
  SECONDS=0
  timeout 250 python3 -m kernelseek eval kernels/seeds/flash_attn_fwd.cu --arch sm90 $flag \
      --out "$OUT/seed-sm90-$mode.json" > "$OUT/seed-$mode.log" 2>&1
  echo "seed $mode: rc=$? wall=${SECONDS} s"; tail -32 "$OUT/seed-$mode.log"
done
