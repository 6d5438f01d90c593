# Sourced by the device scripts: makes the harness importable on the H200. The image has torch but not
# the harness's pydantic and pyseccomp (the judge's seal); FA3 is the sm90 baseline. Installs whatever
# of them was carried (.whl-fa3/1, .whl-harness/*) into /tmp/ks-fa3, once per machine, and keeps the PYTHONPATH in
# /tmp/ks-pythonpath for later calls on the same warm machine (beside an agent stack installed before).
# Stage them here first:
#   ../shared/device/stage-wheels.sh --no-deps --dir .whl-fa3 fa3-fwd==0.0.3
#   ../shared/device/stage-wheels.sh --dir .whl-harness pydantic pyseccomp
# Sets PYTHONPATH; returns 1 with one sentence when the harness still cannot import.
ks_wheels=$(ls .whl-fa3/1/*.whl .whl-harness/*/*.whl 2>/dev/null)
if [ -n "$ks_wheels" ]; then
  # shellcheck disable=SC2086 - one argument a wheel
  python3 -m pip install -q --no-index --no-deps --target /tmp/ks-fa3 $ks_wheels 2>&1 | grep -v WARNING
  old=$(cat /tmp/ks-pythonpath 2>/dev/null)
  case ":$old:" in *:/tmp/ks-fa3:*) ;; *) echo "${old:+$old:}/tmp/ks-fa3" > /tmp/ks-pythonpath ;; esac
fi
[ -f /tmp/ks-pythonpath ] && export PYTHONPATH=$(cat /tmp/ks-pythonpath)
if ! python3 -c "import pydantic, pyseccomp" 2>/dev/null; then
  echo "the harness needs pydantic and pyseccomp, which this machine lacks: stage them with ../shared/device/stage-wheels.sh --dir .whl-harness pydantic pyseccomp and carry .whl-harness/1"
  return 1 2>/dev/null || exit 1
fi
