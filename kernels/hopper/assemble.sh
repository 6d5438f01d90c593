#!/usr/bin/env bash
# Rebuilds kernels/hopper/flash_attn_fwd.cu from its parts (head, generated wgmma wrappers, body).
set -euo pipefail
cd "$(dirname "$0")"
{ cat src_head.cuh; python3 gen_wgmma.py; cat src_body.cuh; } > flash_attn_fwd.cu
