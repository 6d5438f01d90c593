#!/usr/bin/env bash
# Install KernelSeek into .venv, with the system packages its examples need, then run the main job
# (`kernelseek demo`): judge the shipped kernel against FlashAttention on the GPU here — or, on a machine
# without one, say so and do what runs. It ends by printing the command to use next.
#   bash setup.sh            install and run the main job
#   bash setup.sh --no-demo  install only (CI)
# On a machine without a GPU, install torch's CPU build into .venv first (a torch that imports is kept):
#   python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
set -euo pipefail
cd "$(dirname "$0")"

# System packages, where a package manager is here (with sudo when not root); otherwise one sentence says how.
# bubblewrap: the worker's shell sandbox (kernelseek/agent/sandbox.py); without it `kernelseek run` refuses.
# libseccomp: the judge seals its candidate's channel with a seccomp filter (kernelseek/harness/seal.py).
system_package() {  # WHAT APT_PACKAGE DNF_PACKAGE CHECK
  if eval "$4" >/dev/null 2>&1; then return; fi
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  local failed="setup.sh: $1 could not be installed here; as root, install the package $2 (apt-get) or $3 (dnf)."
  if [ -n "$sudo" ] && ! command -v sudo >/dev/null; then
    echo "$failed" >&2
  elif command -v apt-get >/dev/null; then
    { $sudo apt-get update -q && $sudo apt-get install -y -q "$2"; } || echo "$failed" >&2
  elif command -v dnf >/dev/null; then
    $sudo dnf install -y "$3" || echo "$failed" >&2
  else
    echo "setup.sh: $1 is missing and neither apt-get nor dnf is here; install $1 with this system's packages." >&2
  fi
}
system_package bubblewrap bubblewrap bubblewrap "command -v bwrap"
system_package libseccomp libseccomp2 libseccomp "ldconfig -p | grep -q 'libseccomp\.so\.2'"

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch 2.13.0 first and pinned: a loose requirement can pull a multi-GB build the machine does not need.
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -m pip install -q torch==2.13.0
# every other package at the version constraints.txt locks (.ci/lock rewrites it from pyproject.toml's bounds)
.venv/bin/python -m pip install -q -e '.[dev]' -c constraints.txt
status=0
[ "${1:-}" = "--no-demo" ] || .venv/bin/kernelseek demo || status=$?
echo
echo "Installed. The command is $PWD/.venv/bin/kernelseek; put it on PATH with"
echo "  export PATH=\"$PWD/.venv/bin:\$PATH\"     (or: source .venv/bin/activate)"
echo "then a first run (a scripted worker, no model needed) that reaches a decision point and asks:"
echo "  kernelseek run rmsnorm_cpu --model scripted/evals/examples/first_run.yaml --mode auto --target-gain 1.5 --max-steps 4"
exit "$status"
