"""Hearing a claimed limit: does the worker say that something stops the kernel getting faster?

The rule detector reads the worker's words sentence by sentence. A sentence claims a limit when it has
a *limit cue* and no *suppressor*:

limit cues (any one)
    a resource bound        "memory-bound", "hardware-limited", "bound by the bandwidth", "dominated by
                            the launch", "bottlenecked by", "saturating", "maxed out", "inherently serial"
    closeness to a ceiling  "at / near / close to / reached / hit / within 5% of" + "the peak, roofline,
                            ceiling, limit, maximum, speed of light"; "the ceiling"; "optimal"; "the best
                            (we / this design) can do"; "as good / fast as it gets"; "maximum achievable"
    no way forward          an impossibility ("cannot", "won't", "not possible", "impossible", "no way",
                            "I don't think", "unable to") in the same sentence as an improvement word
                            ("faster", "further", "improve", "gain", "squeeze", "beat", "reduce", "help");
                            "no (more) room / headroom", "nothing (left) to gain / optimize",
                            "nothing left to do" (not a bare "nothing to do": a worker with no work),
                            "little left to gain", "diminishing returns", "marginal", "don't see a way
                            around", "exhausted the optimizations", "would require other hardware",
                            "fighting the hardware"
suppressors
    a question ("Is this memory-bound?"), a hypothesis to test ("check whether ... bound"), distance
    from the ceiling ("far from", "below", "headroom to", "room to improve"), a negated cue ("not
    optimal"), or a plan to keep working in the same sentence ("so I'll reduce the stages", "switching
    the grid"; a plan to stop, "so I'll stop here", does not suppress).

The rules were written from the categories above and the `dev` half of the labelled corpus in
`tests/corpora/limit_claims.yaml`; `tests/agent/test_limit_claims.py` measures precision and recall on the
`dev` and `heldout` halves and prints both.

With a model configured (`limit_detector_model`), `model_claim` asks it, for words the rules found no
claim in; a failed call counts as no claim (the run goes on).
"""

from __future__ import annotations

import re

_IMPROVE = (r"(faster|quicker|further|improv\w*|speed ?ups?|gains?|squeez\w*|beat|better|lower|reduc\w*|"
            r"optimi[sz]\w*|help)")
_CEILING = r"(peak|roofline|ceiling|limit|max(imum)?|speed of light|bound)"
_RESOURCE = (r"(memory|bandwidth|compute|latency|dram|hbm|io|launch|hardware|occupancy|issue|overhead|"
             r"registers?|shared[- ]memory|throughput|instruction)")

CUES = [re.compile(p, re.IGNORECASE) for p in (
    # a resource bound
    rf"\b{_RESOURCE}[- ](bound|limited)\b",
    r"\b(bound|limited|bottlenecked|capped|dominated|gated) by\b",
    r"\bsaturat(e|es|ed|ing|ion)\b",
    r"\bmaxed[- ]out\b",
    r"\b(inherently|fundamentally) (serial|sequential|limited|bound|memory|latency|bandwidth)\w*",
    # closeness to a ceiling
    rf"\b(at|near|nearly|close to|reached|reaching|reach|hit|hitting|touching)( \w+)?( \w+)? (the |its |our |their )?"
    rf"(practical |theoretical |hardware'?s? |achievable )?{_CEILING}\b",
    r"\bwithin (about |roughly )?\d+(\.\d+)? ?(%|percent) of\b",
    r"\b(the|a|its|practical|hard) ceiling\b",
    r"\b(?<!not )(?<!non-)(?<!sub)optimal\b",
    r"\bthe best (we|i|it|this|that|this \w+|that \w+) (can|could|will|is going to)\b",
    r"\bas (good|fast|far as) (as )?(it|this) (gets|can go|will go)\b",
    r"\bas good as it gets\b",
    r"\b(max(imum)?|best|peak) (achievable|possible|attainable)\b",
    r"\btheoretical (max(imum)?|minimum|limit|peak|best)\b",
    # no way forward
    rf"\b(cannot|can ?not|can't|won't|will not|unable to|not possible|impossible|no way|don't think|do not think|"
    rf"doubt)\b.*\b{_IMPROVE}\b",
    rf"\b{_IMPROVE}\b.*\b(is|are|seems?|would be) (not possible|impossible)\b",
    r"\bno (more |further |real |obvious |other )?(room|headroom)\b",
    r"\bnothing (left |more |else )?to (gain|optimi[sz]e|squeeze|improve)\b", r"\bnothing (left|more|else) to do\b",
    r"\b(little|not much|nothing) (left|more) to (gain|optimi[sz]e|squeeze)\b",
    r"\bdiminishing returns\b",
    r"\bmarginal\b",
    r"\b(don't|do not|can't|cannot) see (a|any) (way|path|route) (around|forward|past|to)\b",
    r"\bexhausted\b.{0,30}\b(optimi[sz]\w*|ideas|options|approaches|tricks)\b",
    r"\b(out of|run out of) ideas\b",
    r"\b(would|will) (require|need) (\w+ )?hardware\b",
    r"\b(fighting|against) the hardware\b",
)]

SUPPRESSORS = [re.compile(p, re.IGNORECASE) for p in (
    r"\b(whether|if) (it|this|that|we|we're|the \w+|they)\b.*\b(bound|limited|peak|roofline|ceiling|saturat\w*|"
    r"optimal|limit)",
    r"\b(far|well) (from|below|under)\b",
    r"(?<!no )(?<!no more )(?<!no real )\b(headroom|room) (to|for|left)\b",
    r"\ba lot left\b",
    r"\b(clearly|plenty of|lots of|still) (room|headroom)\b",
    # a plan to keep working (a plan to stop is not one)
    r"\b(i'll|i will|let me|i'm going to|i am going to)\s+(?!stop|finish|leave|end|wrap|call)\w+",
    r"\bnext,? (i|we)\b",
    r"\b(switching|increasing|reducing|trying|reverting|fixing|moving) (the|to|it|a)\b",
    r"\bto find out\b",
)]

_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.split(text or "") if s.strip()]


def sentence_claims(sentence: str) -> bool:
    """Whether one sentence claims a limit, by the rules above."""
    if sentence.rstrip().endswith("?"):
        return False
    if not any(cue.search(sentence) for cue in CUES):
        return False
    return not any(s.search(sentence) for s in SUPPRESSORS)


def rule_claim(text: str) -> str | None:
    """The first sentence of `text` that claims a limit (at most 300 characters), or None."""
    for sentence in sentences(text):
        if sentence_claims(sentence):
            return sentence[:300]
    return None


MODEL_PROMPT = ("Does the following message from a programmer claim that the code cannot be made (much) faster "
                "because of some limit (hardware, bandwidth, peak, compiler, impossibility, no way left)? Answer YES "
                "or NO on the first line, then quote the sentence.\n\n")


def model_claim(text: str, model: str) -> str | None:
    """The claimed limit a model hears in `text` (the sentence it quotes), or None; a failed call is None."""
    from kernelseek.models import completion

    try:
        reply = completion(model=model, messages=[{"role": "user", "content": MODEL_PROMPT + text[-4000:]}])
        answer = (reply.choices[0].message.content or "").strip()
    except Exception:  # noqa: BLE001 - a provider error: no claim heard, the run goes on
        return None
    if not answer.upper().startswith("YES"):
        return None
    quoted = answer.split("\n", 1)[-1].strip() if "\n" in answer else ""
    return quoted[:300] or "limit claimed"


def claimed_limit(text: str, model: str | None = None) -> str | None:
    """The sentence in which the worker claims a limit, or None: the rules first, then the model if given."""
    found = rule_claim(text)
    if found or not model or not (text or "").strip():
        return found
    return model_claim(text, model)
