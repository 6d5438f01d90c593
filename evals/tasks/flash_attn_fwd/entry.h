// The C entry point every flash_attn_fwd kernel exports (FlashAttention forward semantics).
// Layout: [batch, seqlen, heads, head_dim] bf16 through strides {batch, row, head} in elements;
// the last dimension is contiguous. Varlen (cu_seqlens_* non-NULL): q/k/v/out are packed
// [total, heads, head_dim], the batch stride is ignored, seqlen_q/seqlen_k are the maximum lengths,
// and lse is [heads_q, total_q]. Otherwise lse is [batch, heads_q, seqlen_q].
// Causal masks are aligned bottom-right when seqlen_q != seqlen_k: query row i sees key j iff
// j <= i + seqlen_k - seqlen_q. Rows with no visible key get zeros and lse = -inf.
// softcap > 0: scores become softcap * tanh(score * softmax_scale / softcap) (scale applied inside).
// Returns 0, or non-zero for an error or an unsupported case. The launcher must be capture-safe
// after its first call: no allocation, synchronization or host-device copy on later calls.
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int ks_flash_attn_fwd(
    const void* q, const void* k, const void* v,
    void* out,
    float* lse,
    const int* cu_seqlens_q, const int* cu_seqlens_k,
    int batch, int seqlen_q, int seqlen_k,
    int heads_q, int heads_kv, int head_dim,
    const long long* q_strides, const long long* k_strides,
    const long long* v_strides, const long long* o_strides,
    float softmax_scale, float softcap, int causal,
    void* stream);
#ifdef __cplusplus
}
#endif
