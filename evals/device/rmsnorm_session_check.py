"""Check a scripted session's trace against issue 18: the starting kernel judged (quick, then full) and
made the best; a wrong candidate rejected on its quick judgement; a question asked at "done"; the
last candidate correct on its full judgement and made the best, faster than the start. Prints one
line per check and exits non-zero if any fails.

    python3 evals/device/rmsnorm_session_check.py runs/rms-scripted
"""

from __future__ import annotations

import sys
from pathlib import Path

from kernelseek.trace import read_trace


def check(run: Path) -> list[tuple[bool, str]]:
    events = read_trace(run / "trace.jsonl")
    evaluations: dict[int, list[dict]] = {}
    for e in events:
        if e["type"] == "evaluation":
            evaluations.setdefault(e["candidate"], []).append(e)
    if len(evaluations) < 3:
        return [(False, f"{len(evaluations)} candidates were judged, not the start, the wrong one and the faster one")]
    start, wrong, faster = evaluations[0], evaluations[1], evaluations[max(evaluations)]
    best_full = next((e for e in faster if e["judgement"] == "full"), None)
    questions = [e for e in events if e["type"] == "question"]
    end = next((e for e in events if e["type"] == "run_end"), None)
    return [
        (start[-1]["judgement"] == "full" and start[-1]["correct"] and start[-1]["best"],
         f"the starting kernel: {', '.join(describe(e) for e in start)}"),
        (all(not e["correct"] and not e["best"] for e in wrong) and wrong[0]["judgement"] == "quick",
         f"the wrong candidate rejected: {describe(wrong[0])}: {str(wrong[0].get('reason'))[:160]}"),
        (any(q["decision_point"] == "done" for q in questions),
         f"questions asked: {[(q['decision_point'], q['source'], q['text'][:60]) for q in questions]}"),
        (best_full is not None and best_full["correct"] and best_full["best"]
         and best_full["speedup"] > start[-1]["speedup"],
         f"the faster candidate made the best after its full judgement: {', '.join(describe(e) for e in faster)}"),
        (end is not None, f"the run ended: {end and end['reason']}"),
    ]


def describe(e: dict) -> str:
    speed = f" {e['speedup']:.3f}x" if e.get("speedup") else ""
    held = e.get("holdout")
    held = f" (hold-out {held['correct']}/{held['n']})" if held else ""
    return f"{e['judgement']} {'correct' if e['correct'] else 'INCORRECT'}{speed}{held}{' → best' if e['best'] else ''}"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 evals/device/rmsnorm_session_check.py RUN_FOLDER")
    results = check(Path(sys.argv[1]))
    for ok, line in results:
        print(("ok   " if ok else "FAIL ") + line)
    print("session: " + ("PASSED" if all(ok for ok, _ in results) else "FAILED"))
    sys.exit(0 if all(ok for ok, _ in results) else 1)
