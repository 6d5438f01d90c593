#!/usr/bin/env bash
# Rebuild the prepared Hopper attention candidates of 2026-12-05 into .cand/ from their patches, each checked
# to apply cleanly, then prebuild them into .ks-cache for a device call (NOTES.md, "The next device calls").
#   bash kernels/hopper/versions/make_candidates.sh [--no-build]   # .cand/v40.cu ... .cand/v73.cu (v73: shipped)
set -euo pipefail
cd "$(dirname "$0")/../../.."
V=kernels/hopper/versions BASE=.cand/v39.cu
mkdir -p .cand
git show 87d1108:kernels/hopper/flash_attn_fwd.cu > "$BASE"  # v39, the base of v40-v51
make() {  # make NAME FROM PATCH...
  local name=$1 from=$2; shift 2
  cp "$from" ".cand/$name.cu"
  for p in "$@"; do patch -s --no-backup-if-mismatch ".cand/$name.cu" < "$V/$p"; done
  echo ".cand/$name.cu"
}
make v40 "$BASE" v40_v39_varlen_maps_bound_on_device.patch
make v41 "$BASE" v41_v39_d256_turns_with_borrowed_o_staging.patch
make v43 "$BASE" v43_v39_q_released_at_last_s_store_read_overlapped.patch
make v44 "$BASE" v44_v39_bands_at_any_wave_count.patch
make v47 "$BASE" v47_v39_softcap_factor_in_the_log2_scale.patch
make v51 "$BASE" v51_v39_middles_of_two_slots_paired.patch
make v42 "$BASE" v40_v39_varlen_maps_bound_on_device.patch v41_v39_d256_turns_with_borrowed_o_staging.patch
make v45 .cand/v42.cu v45_v42_with_v43.patch
make v46 .cand/v45.cu v44_v39_bands_at_any_wave_count.patch
make v48 .cand/v46.cu v48_v46_with_v47.patch
make v49 .cand/v44.cu v49_v44_fed_tiles.patch
make v50 .cand/v48.cu v50_v48_with_v49.patch
make v52 .cand/v50.cu v52_v50_with_v51.patch
make v53 .cand/v52.cu v53_v52_varlen_schedule_fed.patch
make v54 .cand/v53.cu v54_v53_d256_80_key_blocks.patch
make v55 .cand/v54.cu v55_v54_fed_stage_in_uniform_register.patch
make v56 .cand/v55.cu v56_v55_d256_fixed_length_fed.patch
make v57 .cand/v56.cu v57_v56_d192_fed_tile_in_shared_memory.patch
make v58 .cand/v57.cu v58_v57_d192_varlen_fed.patch
make v59 .cand/v58.cu v59_v58_fed_index_read_by_lane_0.patch
make v60 .cand/v59.cu v60_v59_feed_only_d192_d256.patch
make v61 .cand/v60.cu v61_v60_pairs_and_bands_only_while_their_kv_fits_l2.patch
make v62 .cand/v61.cu v62_v61_waits_sleep.patch
make v63 .cand/v62.cu v63_v62_whole_softmax_under_own_pv.patch
make v64 .cand/v62.cu v64_v62_row_max_under_own_pv.patch
make v65 .cand/v62.cu v65_v62_mask_as_row_bounds.patch
make v66 .cand/v64.cu v65_v62_mask_as_row_bounds.patch
make v67 .cand/v61.cu v67_v61_row_bound_mask_d128_softmax_under_own_pv.patch
make v68 .cand/v67.cu v68_v67_row_max_in_two_chains.patch
make v69 .cand/v67.cu v69_v67_one_ex2_in_eight_on_the_fma_pipe.patch
make v70 .cand/v68.cu v70_v68_with_v69.patch
make v71 .cand/v67.cu v71_v67_softcap_keeps_the_wait_before_its_softmax.patch
make v72 .cand/v70.cu v72_v70_with_v71.patch
make v73 .cand/v67.cu v73_v67_d64_causal_tall_narrow_blocks.patch
PY=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
if [ "${1:-}" != --no-build ]; then
  for v in v40 v41 v42 v43 v44 v45 v46 v47 v48 v49 v50 v51 v52 v53 v54 v55 v56 v57 v58 v59 v60 v61 v62 v63 v64 v65 v66 v67 v68 v69 v70 v71 v72 v73; do
    KERNELSEEK_CACHE=$PWD/.ks-cache "$PY" -m kernelseek eval ".cand/$v.cu" --arch sm90 --compile-only | tail -1
  done
fi
