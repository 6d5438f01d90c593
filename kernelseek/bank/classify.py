"""Classify a question's kind, and find the words that tie it to one operator, library or vendor.

The rule-based classifier (used when no model is configured) applies these rules in order; the first
that matches decides:

1. **reject_limit** — the message argues with a limit: it names a ceiling or bound as a thing ("that
   bound", "memory-bound", "the limit", "ceiling", "peak", "roofline", "saturated", "optimal",
   "diminishing returns", "unavoidable", "the hardware", "best possible"), or disputes a claim ("are you
   sure", "who says", "prove", "how far from", "what would have to be true", "measured how", "why do you
   think", "compared with what", "can't go faster"). "What limits the occupancy?" (the verb) is not one.
2. **inform** — the message supplies a technique instead of a direction: an instruction that starts
   with a transformation verb (INFORM_VERBS: "use", "try", "swap", "put", "unroll", "pad", ...), a
   proposal ("have you tried", "why not", "what about", "you could", "consider"), or a statement of
   what a mechanism can do ("The asynchronous copies can load the next tile ...").
3. **layer_shift** — the message points at a layer of the program: the algorithm, the work
   decomposition and launch, data movement and the memory hierarchy, the instruction mix and
   scheduling, synchronization, the compiler's output (its instructions, disassembly, "the SASS"), or
   the measurement (see LAYER_PATTERNS). Naming a vendor's mechanism no longer makes a question
   `inform` by itself: "Look at the SASS." points at a layer.
4. **other** — anything else (process nudges, encouragement, bookkeeping, a failing scenario).

These rules are measured on `tests/corpora/question_kinds.yaml`, labelled before they were written
(`tests/bank/test_question_kinds.py` prints the accuracy on its dev and held-out halves).

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

from kernelseek.trace import QUESTION_KINDS

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

_PHRASE = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"


def _compile(words: tuple[str, ...]) -> list[tuple[str, re.Pattern[str]]]:
    return [(w, re.compile(_PHRASE.format(re.escape(w)), re.IGNORECASE)) for w in words]


_FLAG_PATTERNS = _compile(OPERATOR_WORDS) + _compile(LIBRARY_WORDS) + _compile(VENDOR_WORDS)

LIMIT_PATTERNS = [re.compile(p, re.IGNORECASE) for p in (
    # a ceiling or bound named as a thing
    r"\b(memory|bandwidth|compute|latency|launch|issue|occupancy|overhead|io|hardware|dram|hbm)[- ](bound|limited)\b",
    r"\b(that|this|the|a|your|its) bound\b", r"\bbound by\b",
    r"\b(the|a|that|this|your|its|our|hard|real|true|practical) (\w+[- ])?limit\b", r"\blimit (is|was)\b",
    r"\bceiling\b", r"\bpeak\b", r"\broofline\b", r"\bfloor\b", r"\bsaturat\w*", r"\btheoretical\b",
    r"\bthe hardware\b", r"\b(?<!sub)optimal\b", r"\bdiminishing returns\b", r"\bunavoidable\b",
    r"\b(best|fastest) (possible|achievable)\b", r"\bas fast as (it|this) (can|gets)\b", r"\bmaxed out\b",
    r"\bimpossible\b",
    # disputing a claim
    r"\bare you sure\b", r"\bwho (says|said|decided|told)\b", r"\bprove\b", r"\bhow far (from|below|off)\b",
    r"\bwhat would have to (be true|change|hold)\b", r"\bhow did you (measure|know|conclude)\b",
    r"\b(measured|measure it|measure that) how\b", r"\bby what measurement\b",
    r"\bwhy do you (think|believe|say)\b", r"\bcompared (with|to) what\b",
    r"\b(cannot|can'?t|can not) (go|get|run) (any )?(faster|quicker|further)\b",
    r"\b(cannot|can'?t|can not) be (made|done|improved|beaten)\b",
)]
INFORM_VERBS = ("use", "try", "add", "switch", "replace", "swap", "put", "enable", "pad", "unroll",
                "double-buffer", "mark", "vectorize", "increase", "decrease", "raise", "lower", "apply",
                "fuse", "prefetch", "inline", "move", "hoist", "precompute", "transpose", "interleave",
                "launch", "split", "merge", "remove", "drop", "cache", "store")
INFORM_PATTERNS = [re.compile(p, re.IGNORECASE) for p in (
    r"^\s*(please\s+)?(" + "|".join(re.escape(v) for v in INFORM_VERBS) + r")\b",
    r"\bhave you tried\b", r"\bdid you try\b", r"\byou (should|could|might|can) (use|try|add|keep|put|"
    r"move|load|store|fuse|split|launch|replace|swap)\b", r"\bwhy not\b",
    r"^\s*what about\b", r"^\s*how about\b", r"^\s*consider\b",
    r"^[^?]*\b(can|could|lets you|let you|allows?|would let)\b[^?]*$",  # a statement of what a mechanism can do
)]
LAYER_PATTERNS = [re.compile(p, re.IGNORECASE) for p in (
    r"\blayers?\b", r"\balgorithm\w*", r"\brecomput\w*", r"\breorder\w*", r"\barithmetic\b",
    r"\blaunch\w*", r"\bgrid\b", r"\bwaves?\b", r"\boccupancy\b", r"\bdecompos\w*", r"\bsplit\w*",
    r"\bblocks?\b", r"\bmemory\b", r"\bdata\b", r"\bmoved?\b", r"\bbytes?\b",
    r"\bon[- ]chip\b", r"\bcache\w*", r"\blayout\b", r"\b(re)?loads?\b", r"\breloaded\b", r"\bstores?\b",
    r"\bwritten back\b", r"\bregisters?\b", r"\bspill\w*", r"\binstructions?\b", r"\bschedul\w*",
    r"\blatency\b", r"\bissued?\b", r"\bpipelin\w*", r"\bstages?\b", r"\boverlap\w*", r"\bloops?\b",
    r"\border\b", r"\bsynchroni[sz]\w*", r"\bbarriers?\b", r"\block-?step\b", r"\bstalls?\b",
    r"\bcompiler\b", r"\bgenerated\b", r"\bemitted\b", r"\bassembly\b", r"\bdisassembl\w*",
    r"\bsass\b", r"\bptx\b", r"\bcompiled\b", r"\btiming\w*", r"\bmeasur\w*", r"\bprofil\w*",
    r"\bhost\b", r"\binner loop\b",
)]


def operator_words(text: str) -> list[str]:
    """Operator, library and vendor-specific words in `text`, lowercased, in order of first use."""
    found: list[tuple[int, str]] = []
    for word, pattern in _FLAG_PATTERNS:
        match = pattern.search(text)
        if match:
            found.append((match.start(), word))
    words: list[str] = []
    for _, word in sorted(found):
        if not any(word != other and word in other for _, other in found):  # "mma" inside "mma.sync"
            if word not in words:
                words.append(word)
    return words


def rule_kind(text: str) -> str:
    """The kind of a question by the documented rules above."""
    if any(p.search(text) for p in LIMIT_PATTERNS):
        return "reject_limit"
    if any(p.search(text) for p in INFORM_PATTERNS):
        return "inform"
    if any(p.search(text) for p in LAYER_PATTERNS):
        return "layer_shift"
    return "other"


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
