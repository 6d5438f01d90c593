"""Attention as real models run it: the hold-out's second half is drawn from published model configurations.

Each entry is (model, query heads, key/value heads, head dim, logit softcap) as the model's `config.json` on
the Hugging Face Hub gives them (`num_attention_heads`, `num_key_value_heads`, `head_dim` or
`hidden_size / num_attention_heads`, `attn_logit_softcapping`); the source of each is
https://huggingface.co/<model>/blob/main/config.json. Sliding windows, attention sinks and QK norms are left
out (the task has none); models whose V head dim differs from the QK one (multi-head latent attention) are
left out too.

A draw picks a model, a tensor-parallel degree that serving engines accept for it (query heads divisible by
the degree; key/value heads divisible by it, or replicated when fewer than the degree), and one of the three
ways a serving engine calls attention:
- prefill: a batch of whole prompts, causal;
- decode: one new token per sequence (a few, causal, under speculative decoding) against caches of unequal
  lengths in one continuous batch (varlen);
- chunked prefill: a chunk of a long prompt against the cache before it plus itself, causal (q shorter than k).
"""

from __future__ import annotations

import math
import random

MODELS = (
    # model, heads_q, heads_kv, head_dim, softcap
    ("meta-llama/Llama-3.2-1B", 32, 8, 64, 0.0),
    ("meta-llama/Llama-3.2-3B", 24, 8, 128, 0.0),
    ("meta-llama/Meta-Llama-3-8B", 32, 8, 128, 0.0),
    ("meta-llama/Meta-Llama-3-70B", 64, 8, 128, 0.0),
    ("meta-llama/Llama-3.1-405B", 128, 8, 128, 0.0),
    ("mistralai/Mistral-7B-v0.1", 32, 8, 128, 0.0),
    ("mistralai/Mixtral-8x7B-v0.1", 32, 8, 128, 0.0),
    ("Qwen/Qwen2.5-0.5B", 14, 2, 64, 0.0),
    ("Qwen/Qwen2.5-1.5B", 12, 2, 128, 0.0),
    ("Qwen/Qwen2.5-7B", 28, 4, 128, 0.0),
    ("Qwen/Qwen2.5-32B", 40, 8, 128, 0.0),
    ("Qwen/Qwen2.5-72B", 64, 8, 128, 0.0),
    ("Qwen/Qwen3-8B", 32, 8, 128, 0.0),
    ("google/gemma-2-2b", 8, 4, 256, 50.0),
    ("google/gemma-2-9b", 16, 8, 256, 50.0),
    ("google/gemma-2-27b", 32, 16, 128, 50.0),
    ("google/gemma-3-12b-pt", 16, 8, 256, 0.0),
    ("microsoft/Phi-3-mini-4k-instruct", 32, 32, 96, 0.0),
    ("microsoft/Phi-3-medium-4k-instruct", 40, 10, 128, 0.0),
    ("tiiuae/falcon-7b", 71, 1, 64, 0.0),
    ("bigcode/starcoder2-15b", 48, 4, 128, 0.0),
)
TP_DEGREES = (1, 2, 4, 8)
WAYS = ("prefill", "decode", "chunked")
WAY_WEIGHTS = (2, 2, 1)
MAX_TOKENS = 16384  # a prefill batch's tokens, as the suite's grid (and a typical scheduler budget) holds
MAX_SEQLEN = 16384


def heads_per_gpu(heads_q: int, heads_kv: int, tp: int) -> tuple[int, int] | None:
    """(query heads, key/value heads) on one GPU at tensor-parallel degree `tp`, or None where the
    model cannot be split so: key/value heads split as the query heads do, or are replicated when fewer."""
    if heads_q % tp or (heads_kv % tp and tp % heads_kv):
        return None
    return heads_q // tp, max(1, heads_kv // tp)


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return max(lo, min(hi, round(math.exp(rng.uniform(math.log(lo), math.log(hi))))))


def draw(rng: random.Random) -> tuple[str, dict]:
    """(the way attention is called, the scenario's params) for one model configuration; the caller
    fits the batch to its size bounds with `shrink`."""
    model, hq, hkv, d, cap = rng.choice(MODELS)
    hq, hkv = rng.choice([h for tp in TP_DEGREES if (h := heads_per_gpu(hq, hkv, tp))])
    way = rng.choices(WAYS, WAY_WEIGHTS)[0]
    p: dict = {"heads_q": hq, "heads_kv": hkv, "head_dim": d, "softcap": cap, "magnitude": 2.0 if cap else 1.0,
               "causal": True, "layout": "contiguous", "model": model}
    if way == "prefill":
        s = _log_uniform(rng, 128, MAX_SEQLEN)
        p.update(batch=max(1, MAX_TOKENS // s // rng.choice((1, 1, 2, 4))), seqlen_q=s, seqlen_k=s)
    elif way == "chunked":
        chunk = rng.choice((256, 512, 1024, 2048))
        p.update(batch=1, seqlen_q=chunk, seqlen_k=min(MAX_SEQLEN, chunk + _log_uniform(rng, 256, MAX_SEQLEN)))
    else:
        n = _log_uniform(rng, 1, 64)
        q = 1 if rng.random() < 0.75 else rng.choice((2, 4, 8))  # speculative decoding checks a few tokens
        caches = [_log_uniform(rng, 256, MAX_SEQLEN) for _ in range(n)]
        p.update(layout="varlen", batch=n, seqlens_q=[q] * n, seqlens_k=caches, seqlen_q=q, seqlen_k=max(caches),
                 causal=q > 1)
    return way, p


def shrink(p: dict, fits) -> dict:
    """`p` with fewer sequences, then (with one left) shorter ones, until `fits(p)`."""
    while not fits(p):
        if p["batch"] > 1:
            p["batch"] -= 1
        elif p["seqlen_q"] == p["seqlen_k"] and p["layout"] != "varlen":  # one prompt: it shortens whole
            p["seqlen_q"] = p["seqlen_k"] = p["seqlen_k"] // 2
        else:  # a chunk or a decode step: the cache before it shortens
            p["seqlen_k"] = max(p["seqlen_q"], p["seqlen_k"] // 2)
        if p["layout"] == "varlen":
            n = p["batch"]
            p["seqlens_q"], p["seqlens_k"] = p["seqlens_q"][:n], [min(k, p["seqlen_k"]) for k in p["seqlens_k"][:n]]
            p["seqlen_k"] = max(p["seqlens_k"])
    return p
