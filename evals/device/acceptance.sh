#!/usr/bin/env bash
# The judgements the issues need from an H200, in ONE device call (about 4 minutes): the seed and the
# shipped Hopper kernel on the full sm90 suite (issues 2 and 5), then memcheck and racecheck on the
# shipped kernel: FA3 (and the agent stack, when staged) installed, then evals/device/judge_candidates.sh.
# Before the call, here:
#   ../shared/device/stage-wheels.sh --no-deps --dir .whl-fa3 fa3-fwd==0.0.3
#   KERNELSEEK_CACHE=$PWD/.ks-cache .venv/bin/kernelseek eval FILE --arch sm90 --compile-only   (each kernel)
# Device call: `bash evals/device/acceptance.sh`, carrying .whl-fa3/1 and the kernels' .ks-cache/build/* folders.
# With the agent stack staged in the same call (evals/device/loop_session.sh says how), it is installed too.
set -uo pipefail
START=$SECONDS; LIMIT=${LIMIT:-570}
mkdir -p /root/kswheels && cp .whl-fa3/1/*.whl /root/kswheels/
installer=$(ls .whl-agent/*/install-wheels.sh 2>/dev/null | head -1); installer=${installer:-.whl-fa3/1/install-wheels.sh}
if ! line=$(bash "$installer"); then  # the agent stack failed to install: FA3 alone still serves the judge
  python3 -m pip install -q --no-index --no-deps --target /tmp/ks-fa3 .whl-fa3/1/*.whl || exit 1
  line="export PYTHONPATH=/tmp/ks-fa3"
fi
eval "$line"
echo "$PYTHONPATH" > /tmp/ks-pythonpath   # a later call on the same warm machine reuses the install
source evals/device/harness_wheels.sh || exit 1  # pydantic, when the agent stack did not bring it
SANITIZE=kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu LIMIT=$((LIMIT - (SECONDS - START))) bash evals/device/judge_candidates.sh \
    seed-sm90-full=kernels/seeds/flash_attn_fwd.cu hopper-sm90-full=kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu
