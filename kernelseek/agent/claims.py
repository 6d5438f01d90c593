"""Hearing a claimed limit: does the worker say that something stops the kernel getting faster?

The rule detector reads the worker's words clause by clause (a sentence, or the part of one between
semicolons). A clause claims a limit when it has a *limit cue* and no *suppressor*; numbers count
("at 93% of peak" is a cue, "at 40% of peak" a suppressor).

limit cues (any one)
    a bound on a resource     "memory-bound", "bandwidth-capped", "launch-dominated", "limited / capped /
                              bottlenecked / dominated by", "the bottleneck", "the limiter", "saturated",
                              "maxed (out)", "tops out", "plateaued", "converged", "the (memory) wall"
    a ceiling reached         "at / near / reached / hit / against / within 5% of" + "the peak, roofline,
                              ceiling, limit, floor, lower bound, speed of light"; "that's the (physical)
                              limit"; "the ceiling has been reached"; "at 91% of peak" (80% or more);
                              "as fast / quick / good / far as (it / memory / the hardware) (gets / goes /
                              allows)"; "optimal", "fully optimized", "the fastest possible", "the best
                              (it / we / this kernel) (can / will)"
    an inherent cost          "unavoidable", "irreducible", "inherent(ly)", "intrinsic", "fundamental (to)",
                              "structural", "by nature", "physics", "a hardware limitation", "the
                              hardware's fault", "out of my control"
    no way forward            an impossibility ("cannot", "won't", "not possible", "no way", "don't think",
                              "doubt") with an improvement word ("faster", "further", "improve", "gain",
                              "hide", "reduce", "eliminate", ...); "no (more / further) room, headroom, slack,
                              upside, parallelism, optimization"; "nothing (more / left / else / obvious)";
                              "nowhere to go"; "little / minimal / negligible" gains or upside; "in the
                              noise"; "diminishing returns"; "out of ideas"; "hit a wall"; "would need a
                              different GPU"; "no matter what"; "stuck at"
    a stop with a reason      a stop ("so I'm stopping", "I'm done", "calling it") in the same clause as a
                              resource or rate ("that is the practical HBM rate, so I'm stopping")
suppressors
    a question; a hypothesis or a condition ("whether", "if it's", "hypothesis", "maybe ... maybe not",
    "should be"); distance from the ceiling ("far from", "well below", "under the roofline", "only 40%",
    "still room", "headroom left", "more to gain", "should be possible"); a negated or retracted cue ("not
    memory-bound", "not at the limit", "not optimal", "was wrong about the ceiling"); a past state ("used
    to be", "the old version was"); a plan to keep working in the same clause ("so I'll reduce the stages",
    "switching the grid", "implementing it now"; a plan to stop does not suppress); and the other senses
    of the words ("time limit", "rate-limited", "loop limit", "out of bounds", "peak memory usage", "the
    optimal tile size", "saturating arithmetic").

The rules were revised by reading the failures of the `dev` part of `tests/corpora/worker_claims.yaml`
(and of the earlier `tests/corpora/limit_claims.yaml`); `tests/agent/test_limit_claims.py` prints precision
and recall on the parts no rule was revised against, and fails below 0.90.

With a model configured (`limit_detector_model`), `model_claim` asks it, for words the rules found no
claim in; a failed call counts as no claim (the run goes on).
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

_IMPROVE = (r"(faster|quicker|further|more|much|improv\w*|speed ?(ups?|it up|up)|sped up|gains?|squeez\w*|beat|better|"
            r"lower|reduc\w*|optimi[sz]\w*|help|hidden|hide|eliminat\w*|avoid\w*|parallel\w*|exceed|go below|"
            r"closing|close the gap|touch|higher)")
_RESOURCE = (r"(memory|mem|bandwidth|bw|compute|latency|dram|hbm|io|i/o|launch|hardware|occupancy|issue|overhead|"
             r"registers?|register file|shared[- ]memory|smem|throughput|instructions?|sfu|l2|bus|math|"
             r"arithmetic|load|store|tensor[- ]cores?|pipes?|scheduler|gpu|card|sms?)")
_CEILING = (r"(peak|roofline|ceiling|speed[- ]of[- ]light|floor|lower bound|upper bound|limits?|limitation|"
            r"max(imum)?|wall|bound)")
_STOP = (r"(i'?m stopping|stopping( here)?|i'?ll stop|i will stop|i'?m done|we'?re done|i am done|calling it|"
         r"wrapping up|ending the session|leaving it|that'?s it|i'?d call (this|it) done|done optimi[sz]ing)")

CUES = [re.compile(p, _I) for p in (
    # a bound on a resource
    rf"\b{_RESOURCE}[- ]?(bound|limited|capped|dominated|starved|constrained)\b",
    r"\b(bound|limited|capped|bottlenecked|gated|dominated|constrained|throttled) (by|on)\b",
    r"\b(the|a|is the|are the) (\w+ )?(bottleneck|limiter|limiting factor)\b", r"\bbottlenecked\b",
    r"\bsaturat(e|es|ed|ing|ion)\b", r"\bmaxed( out)?\b",
    r"\btop(s|ped)? out\b", r"\bplateau(ed|s)?\b", r"\bconverged\b",
    r"\b(the|a) (\w+ )?wall\b",
    r"\b(inherently|fundamentally|intrinsically) (serial|sequential|limited|bound|\w+-(bound|dominated|limited))",
    # a ceiling reached
    rf"\b(at|near|nearly|close to|reached|reaching|reach|hit|hits|hitting|touching|against|met|meets|sits? (right )?at)"
    rf"( \w+)?( \w+)? (the |its |our |their |a |this )?(practical |theoretical |physical |hardware'?s? |achievable |"
    rf"natural |hard |memory |bandwidth |hbm |dram )?{_CEILING}\b",
    rf"\b(that'?s|this is|it'?s|is|was|are) (effectively |essentially |basically |practically |about |roughly |already )?(the|a|its|our|their) (\w+ )?(physical |practical |theoretical |hard |"
    rf"natural )?{_CEILING}\b",
    rf"\b(the |its )?{_CEILING} (has been|have been|is|was) (reached|hit|met|achieved)\b",
    rf"^\W*{_CEILING} (reached|hit|met)\b",
    r"\bwithin (about |roughly )?\d+(\.\d+)? ?(%|percent) of\b",
    r"\b(the|a|its|practical|hard) ceiling\b",
    r"\b(physical|hard|hardware|practical|theoretical|natural) (limit|limitation|ceiling|maximum)s?\b",
    r"\bhardware limitation\b",
    r"\b(?<!not )(?<!non-)(?<!sub)(?<!non)optimal\b(?! (tile|block|size|config\w*|value|number|choice|split|"
    r"stage|thread|launch|grid|unroll)\w*)",
    r"\bfully optimi[sz]ed\b",
    r"\bthe best (we|i|it|this|that|this \w+|that \w+|anyone) (can|could|will|is going to|'ll)\b",
    r"\b(the best|the most) (this \w+|anyone|we|i|it) (can|could|will)\b",
    r"\bthe most anyone\b",
    r"\bas (good|fast|quick|far|much) as (it|this|i|we|memory|the \w+|they|anything) (gets|can|will|could|goes|"
    r"allows|permits)\b",
    r"\b(max(imum)?|best|peak|fastest|quickest) (achievable|possible|attainable|that exists|there is)\b",
    r"\b(is|are) (\w+ )?the fastest (possible|that exists)\b",
    r"\btheoretical (max(imum)?|minimum|limit|peak|best)\b",
    r"\b(minimum|least) (possible|number of bytes|bytes|traffic)\b.*\b(already|cannot|can't|no )\b",
    r"\balready (the |at the )?minimum\b", r"\bthe minimum possible\b",
    # an inherent cost
    r"\b(unavoidable|irreducible|inherent|intrinsic|structural)\b", r"\bby nature\b",
    r"\bfundamental (to|limit)\b", r"\bfundamentally different (machine|gpu|hardware|card)\b",
    r"\bphysics\b", r"\bhardware'?s fault\b",
    r"\b(out of|beyond) (my|our) control\b",
    r"\bnot something (code|a kernel|software|i) can\b",
    # no way forward
    rf"\b(cannot|can ?not|can'?t|won'?t|will not|wouldn'?t|unable to|not possible|impossible|"
    rf"no (obvious |clear |easy |simple |other |real )?way|don'?t think|"
    rf"do not think|don'?t believe|don'?t expect|don'?t see|doubt|isn'?t possible|not feasible|unrealistic)\b.*"
    rf"\b{_IMPROVE}\b",
    rf"\b{_IMPROVE}\b.*\b(is|are|seems?|would be|isn'?t|is not) (not possible|impossible|not feasible|"
    r"unlikely|unrealistic|pointless)\b",
    r"\b(not|isn'?t|aren'?t) (\w+ )?(possible|feasible|improvable)\b",
    r"\bno (more |further |real |obvious |other |remaining )?(room|headroom|slack|upside|parallelism|way forward|"
    r"point (in )?(optimi\w*|touching|going|trying|further))\b",
    # "no gain from the extra stage" reports one attempt; "no more gains possible" is a claim
    r"\bno (more |further |real |obvious |other |remaining )?(gains?|optimi[sz]ations?|improvements?)\b"
    r"(?! (from|on|with|in) )",
    r"\b(zero|little|minimal|negligible|not (a lot|much)( of)?) (\w+ )?(room|headroom|upside|gains?|improvement|"
    r"left|remaining|more)\b",
    r"\b(headroom|upside|gains?|improvements?)\b[^.;]*\b(minimal|negligible|none|small at best|marginal)\b",
    r"\bheadroom: none\b",
    r"\bnothing (left |more |else |obvious |remains )?(to (gain|optimi[sz]e|squeeze|improve|try|win|be optimi[sz]ed)|"
    r"(more|else) (i|we) can do|left on the table|left to try|can be done)\b",
    r"\bnothing (left|more|else) (to do|i can do)\b", r"\bnothing (obvious )?left\b", r"\bnothing remains\b",
    r"\bnowhere (left )?to go\b",
    r"\b(in|within) the noise\b", r"\bnoise[- ]level\b", r"\b(less|smaller) than the (run-to-run )?(variance|noise)\b",
    r"\bdiminishing returns\b",
    r"\b(gains?|improvements?) (from here |beyond this |further )?(will|would) be (small|marginal|minor|tiny)\b",
    r"\b(beyond|from) (here|this( point)?),? (the )?(improvements?|gains?|speedups?) (would|will) be\b",
    r"\bmarginal at best\b",
    r"\b(don'?t|do not|can'?t|cannot) see (a|any) (way|path|route) (around|forward|past|to)\b",
    r"\bexhausted\b.{0,30}\b(optimi[sz]\w*|ideas|options|approaches|tricks)\b",
    r"\b(out of|run out of|ran out of) ideas\b",
    r"\b(tried|explored) (everything|the design space)\b",
    r"\b(squeezed|wrung) out (everything|all)\b",
    r"\bhit a wall\b",
    r"\b(would|will) (require|need|take) (\w+ )?(\w+ )?(hardware|gpu|machine|card)\b",
    r"\bwould have to come from the hardware\b",
    r"\b(different|new|another|other) (gpu|hardware|machine|card)\b",
    r"\b(fighting|against) the hardware\b",
    r"\b(hardware|gpu) features? (we|i) (can'?t|cannot|don'?t have)\b",
    r"\bno matter what\b", r"\bstuck at\b", r"\bwill stay (slow|below)\b",
    r"\bwon'?t get (any |much )?(better|faster|quicker)\b", r"\bas far as it (goes|will go|can go)\b",
    r"\bthat'?s (just )?how the (gpu|hardware) works\b",
    r"\b(no|not a) (faster|quicker|cheaper) (version|way|implementation)\b",
    r"\b(no|isn'?t a|is not a|not a) (cheaper|faster|quicker|better) way\b",
    r"\bno (kernel|code|one|implementation|amount of \w+) (could|can|would|will)\b",
    r"\beverything that can be (\w+) is (already )?\1\b",
    r"\bdon'?t expect (more|much|any)\b",
    r"\b(the only way forward|the only remaining cost)\b",
    # a stop with a reason
    rf"\b{_RESOURCE}\b.*\b{_STOP}\b", rf"\b{_STOP}\b.*\b{_RESOURCE}\b",
    r"\bdone\b\W+at (the )?(roofline|peak|limit|ceiling)\b",
    r"\bpointless\b",
)]

SUPPRESSORS = [re.compile(p, _I) for p in (
    # a hypothesis or a condition
    r"\b(whether|if) (it|this|that|we|we're|the \w+|they|it's|its)\b",
    r"\bhypothes[ie]s\b", r"\bmaybe\b.*\bmaybe not\b", r"\b(need|needs) [^.;]* to know\b",
    r"\bshould be (compute|memory|bandwidth|latency)[- ]bound\b", r"\bthe roofline model\b",
    # distance from the ceiling
    r"\b(far|well) (from|below|under)\b", r"\bunder the roofline\b", r"\bbelow (the )?(peak|roofline|ceiling)\b",
    r"\bonly (about |around )?\d+(\.\d+)? ?(%|percent|tb/s|gb/s)",
    r"(?<!no )(?<!no more )(?<!no real )(?<!not much )(?<!zero )(?<!little )\b(headroom|room) (to|for|left|remains)\b",
    r"(?<!no )\b(still|plenty of|lots of|a lot of|clearly|some|more) (room|headroom)\b", r"\bremains on\b",
    r"\ba lot left\b", r"\b(more|another \d+%?|another) to gain\b", r"\bcan get another\b",
    r"\b(should|would|might) be possible\b", r"^\W*faster is possible\b", r"\b\dx gap to close\b",
    # a negated or retracted cue
    r"\bnot (\w+ )?(at|near|close to) (the |its |a )?(limit|ceiling|peak|roofline)\b",
    r"\b(isn'?t|is not|aren'?t|are not) (the|a) (limit|ceiling|bound|bottleneck)\b",
    r"\bnot (really|yet|\w+[- ]bound|\w+[- ]limited|the limiter|optimal)\b", r"\bnot (memory|compute)[- ]?bound\b",
    r"\bisn'?t the limiter\b",
    r"\b(was|were|is) wrong\b", r"\bi (thought|assumed)\b", r"\bassumed\b",
    r"\bdon'?t think (we'?re|it'?s|this is) (at|near)\b",
    # a past state
    r"\bused to\b", r"\b(old|previous|earlier|first) (version|claim|result)\b",
    # a plan to keep working (a plan to stop is not one)
    r"\b(i'll|i will|let me|i'm going to|i am going to|we'll|we will)\s+(?!stop|finish|leave|end|wrap|call)\w+",
    r"\bnext,? (i|we)\b", r"\bnext:", r"\bthe next step\b", r"\b(so|then) (i|we) (enlarged|fused|split|moved)\b",
    r"\b(switching|increasing|reducing|trying|reverting|fixing|moving|rechecking|investigating|measuring|"
    r"implementing|splitting|adding|padding|focusing|tackling|rewriting|retrying|dumping|profiling|rebuilding|"
    r"evaluating|continuing|using)\b(?! (to )?(stop|finish))",
    r"\b(will|would) need (a|an) \w+ kernel\b", r"\bours should\b",
    r"\bto find out\b",
    # the other senses of the words
    r"\b(time|rate|loop|upper|step|token|build)[- ]limit", r"\brate[- ]limited\b", r"\blimit check\b",
    r"\bthe limit (on|of) (shared|registers|the loop|threads|blocks)", r"\bout[- ]of[- ]bounds\b",
    r"\bbounds? check", r"\bbounded by\b",
    r"\bpeak (memory|register) (usage|use)\b", r"\bthe peak of the\b", r"\bpeak (flops|tflops)\b",
    r"\bsaturat\w* (arithmetic|to\b|conversion|cast)", r"\boptimal (tile|block|size|config\w*)",
    r"\b(the )?limit (on|of) [\w -]+ (is|are) \d",
    r"\bmarginal on\b", r"\bclose to the (target|end)\b", r"\bfor now\b", r"\bonly (on|for|in) the\b",
    r"\bimpossible (configuration|config|combination|layout|shape)", r"\bbut (i|we) can\b",
    r"\b(bottleneck|limit\w*|limiter) (moved|shifted|changed)\b",
)]

_PERCENT_OF_PEAK = re.compile(r"(\d+(\.\d+)?) ?(%|percent) of (the )?(\w+ )?(\w+ )?(peak|roofline|max(imum)?|"
                              r"theoretical|speed of light|bandwidth|throughput)", _I)
_RATE_OF_RATE = re.compile(r"(\d+(\.\d+)?) ?(tb/s|gb/s) of (\d+(\.\d+)?) ?(tb/s|gb/s)", _I)
_NEAR = 0.80   # a fraction of the peak at or above which a worker that states it claims the ceiling
_FAR = 0.75    # below it, the number itself says there is room

_CLAUSES = re.compile(r"(?<=[.!?;])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The clauses the detector reads: sentences, split further at semicolons."""
    return [s.strip() for s in _CLAUSES.split(text or "") if s.strip()]


def _fraction_of_peak(clause: str) -> float | None:
    found = _PERCENT_OF_PEAK.search(clause)
    if found:
        within = clause[:found.start()].rstrip().lower().endswith(("within", "within about", "within roughly"))
        return 1 - float(found.group(1)) / 100 if within else float(found.group(1)) / 100
    found = _RATE_OF_RATE.search(clause)
    if found and found.group(3).lower() == found.group(6).lower() and float(found.group(4)) > 0:
        return float(found.group(1)) / float(found.group(4))
    return None


def sentence_claims(sentence: str) -> bool:
    """Whether one clause claims a limit, by the rules above."""
    if sentence.rstrip().endswith("?"):
        return False
    fraction = _fraction_of_peak(sentence)
    if fraction is not None and fraction < _FAR:
        return False
    cued = (fraction is not None and fraction >= _NEAR) or any(cue.search(sentence) for cue in CUES)
    if not cued:
        return False
    return not any(s.search(sentence) for s in SUPPRESSORS)


def rule_claim(text: str) -> str | None:
    """The first clause of `text` that claims a limit (at most 300 characters), or None."""
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
