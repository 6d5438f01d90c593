"""Classify a question's kind, and find the words that tie it to one operator, library or vendor.

The rule-based classifier (used when no model is configured) is `kernelseek.bank.kinds.rule_kind`: its
module lists the rules and where they are measured.

`operator_words(text)` returns the operator names, library names and vendor-specific tricks a
question mentions (OPERATOR_WORDS, LIBRARY_WORDS, VENDOR_WORDS). Learning rewrites the ones the term
map knows (`bank/terms.yaml`: "the SASS" -> "the compiled instructions"), asks a model to rewrite them
away when one is configured, and *flags* what is left. The seed bank must have none.

With a model (any litellm model name, e.g. from `$KERNELSEEK_BANK_MODEL`), `model_classify` asks it
for the kind and a rewrite in one JSON reply; a failed call or an unusable reply falls back to the
rules, so learning never stops for a provider's error.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from kernelseek.bank.kinds import rule_kind
from kernelseek.trace import QUESTION_KINDS

__all__ = ["Classification", "classify", "model_classify", "operator_words", "rule_kind"]

OPERATOR_WORDS = (
    "attention", "flash attention", "flashattention", "softmax", "online softmax", "matmul", "gemm",
    "gemv", "convolution", "conv2d", "layernorm", "layer norm", "rmsnorm", "rms norm", "logsumexp",
    "lse", "causal", "kv cache", "kv-cache", "head_dim", "head dim", "qk", "q@k", "qkt", "seqlen",
    "rope", "rotary", "transformer", "fft", "stencil", "scan", "top-k", "topk", "embedding",
)
LIBRARY_WORDS = (
    "cutlass", "cute", "cublas", "cublaslt", "cudnn", "thrust", "cub", "triton", "fa2", "fa3", "fa4",
    "flashinfer", "xformers", "pytorch", "torch", "tensorrt", "cutile", "thunderkittens", "tilelang",
)
VENDOR_WORDS = (
    "tma", "wgmma", "mma.sync", "mma", "ldmatrix", "stmatrix", "cp.async", "cp.async.bulk", "mbarrier",
    "tcgen05", "tmem", "setmaxnreg", "multicast", "warp specialization", "warp-specialized",
    "warp specialized", "warpgroup", "warp group", "swizzle", "swizzling", "tensor core",
    "tensor cores", "tensor memory", "cluster launch", "thread block cluster", "distributed shared memory",
    "dsmem", "ptx", "sass", "nvcc", "cuda", "nvidia", "hopper", "blackwell", "ampere", "sm_90",
    "sm_90a", "sm90", "sm_100", "sm_100a", "sm100", "h100", "h200", "b200", "gb200", "a100", "nsight",
    "ncu", "shfl", "__shfl_sync", "ex2.approx", "fp8", "nvfp4",
)

_PHRASE = r"(?<![A-Za-z0-9_]){}(?:s|es)?(?![A-Za-z0-9_])"  # plurals too: "warpgroups", "tensor cores"


def _compile(words: tuple[str, ...]) -> list[tuple[str, re.Pattern[str]]]:
    return [(w, re.compile(_PHRASE.format(re.escape(w)), re.IGNORECASE)) for w in words]


_FLAG_PATTERNS = _compile(OPERATOR_WORDS) + _compile(LIBRARY_WORDS) + _compile(VENDOR_WORDS)

# sizes that tie a question to one shape: a head dimension ("d128", "hdim 64"), a tile ("128x64"), a number of
# two or more digits ("128 rows"); flagged, since a bank question must fit any operator's shapes
SHAPE_PATTERNS = [re.compile(p, re.IGNORECASE) for p in (
    r"(?<![A-Za-z0-9_])(d|hdim|headdim) ?\d+(?![A-Za-z0-9_])", r"(?<![A-Za-z0-9_.])\d+ ?[x×] ?\d+(?![A-Za-z0-9_])",
    r"(?<![A-Za-z0-9_.x×])\d{2,}(?![A-Za-z0-9_x×])",
)]


def operator_words(text: str) -> list[str]:
    """Operator, library and vendor-specific words (plurals included) and shape sizes ("d128", "128x128",
    "256") in `text`, lowercased, in order of first use."""
    found: list[tuple[int, str]] = []
    for word, pattern in _FLAG_PATTERNS:
        match = pattern.search(text)
        if match:
            found.append((match.start(), word))
    for pattern in SHAPE_PATTERNS:
        for match in pattern.finditer(text):
            if not any(start <= match.start() < start + len(word) for start, word in found):
                found.append((match.start(), match.group(0).lower().replace(" ", "")))
    words: list[str] = []
    for _, word in sorted(found):
        if not any(word != other and word in other for _, other in found):  # "mma" inside "mma.sync"
            if word not in words:
                words.append(word)
    return words


@dataclass
class Classification:
    kind: str
    text: str                      # the question as it goes into the bank (rewritten by a model or the term map)
    flags: list[str] = field(default_factory=list)
    method: str = "rules"          # "rules" | "model:<name>"
    note: str | None = None        # why a model result was not used, if it was not
    rewrites: list[str] = field(default_factory=list)  # the term map's rewrites ("the SASS -> ...")


def classify(text: str, *, model: str | None = None, terms: list | None = None, **completion_kwargs: Any
             ) -> Classification:
    """Kind, bank text and flags for a human message: by a model when one is given, else by rules. The
    kind is decided on the person's own words; the term map (`bank/terms.yaml`, or `terms`) then rewrites
    the operator and vendor words left in the text, and what remains is flagged."""
    from kernelseek.bank.terms import rewrite_terms

    text = " ".join(text.split())
    result = model_classify(text, model, **completion_kwargs) if model else \
        Classification(kind=rule_kind(text), text=text)
    result.text, result.rewrites = rewrite_terms(result.text, terms)
    result.flags = operator_words(result.text)
    return result


def configured_model() -> str | None:
    return os.environ.get("KERNELSEEK_BANK_MODEL") or None


MODEL_PROMPT = """You sort questions that a person asked a coding agent that optimizes a GPU kernel.
Kinds: "layer_shift" (moves the agent to another layer of the program: algorithm, work decomposition
and launch, data movement, instruction mix and scheduling, synchronization, the compiler's output,
the measurement), "reject_limit" (disputes a limit the agent claimed: which ceiling, measured how, how
far, what would have to change), "inform" (supplies a specific technique or fact), "other".
Also rewrite the question so that it names no operator, library or vendor-specific mechanism, keeping
its intent and keeping it short. Reply with JSON only: {"kind": "...", "rewrite": "..."}.

Question: """


def model_classify(text: str, model: str, **completion_kwargs: Any) -> Classification:
    """Ask `model` (through litellm) for the kind and an operator-free rewrite; fall back to rules."""
    fallback = Classification(kind=rule_kind(text), text=text, flags=operator_words(text))
    try:
        from kernelseek.models import completion

        response = completion(model=model, messages=[{"role": "user", "content": MODEL_PROMPT + text}],
                                      temperature=0, **completion_kwargs)
        content = response.choices[0].message.content or ""
        match = re.search(r"\{.*\}", content, re.DOTALL)
        data = json.loads(match.group(0)) if match else {}
        kind = data.get("kind")
        rewrite = " ".join(str(data.get("rewrite") or "").split())
    except Exception as error:  # any provider error: keep learning with the rules
        fallback.note = f"model {model} failed ({error.__class__.__name__}); used the rules"
        return fallback
    if kind not in QUESTION_KINDS or not rewrite:
        fallback.note = f"model {model} gave an unusable reply; used the rules"
        return fallback
    return Classification(kind=kind, text=rewrite, flags=operator_words(rewrite), method=f"model:{model}")
