#!/usr/bin/env bash
# Install KernelSeek into .venv, then run the main job (`kernelseek demo`): judge the shipped kernel
# against FlashAttention on the GPU here — or, on a machine without one, say so and do what runs.
#   bash setup.sh            install and run the main job
#   bash setup.sh --no-demo  install only (CI)
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch 2.13.0 first and pinned: a loose requirement can pull a multi-GB build the machine does not need.
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -m pip install -q torch==2.13.0
# every other package at the version constraints.txt locks (.ci/lock rewrites it from pyproject.toml's bounds)
.venv/bin/python -m pip install -q -e '.[dev]' -c constraints.txt
[ "${1:-}" = "--no-demo" ] || .venv/bin/kernelseek demo
