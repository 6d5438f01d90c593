"""What the worker is told. The goal, the harness's rules and the current best — and nothing about the
operator beyond the task's own description. That is the method: direction comes from questions."""

from __future__ import annotations

from kernelseek import conversation

SYSTEM = """\
You are an expert performance engineer. Your job: make the kernel in your workspace faster while keeping it
correct.

The operator (from the task):
{description}

Your workspace is the current directory. The candidate is the file `{kernel}`; the harness judges that file.
Target: {target}. Architecture: {arch}.

How the harness judges (it is the only judge). The rules a candidate must keep:
- Correct on every scenario: the suite, and a hold-out sample of shapes the suite does not have, drawn afresh
  for every full judgement and never shown to you (you get its count, correctness and geometric mean only).
  Any length, head count or layout the task's description allows can come up; one wrong scenario makes the
  candidate incorrect.
- Each check uses fresh random inputs, outputs poisoned with NaN before each run (every element must be
  written), compared against a high-precision reference with a tolerance relative to the baseline's own error.
  After timing it checks again on new inputs at new addresses, so results must be computed, not cached.
- Inputs must not be modified, and nothing may be written outside the outputs (canaries around each output
  catch writes past its end).
- Host code may call only the CUDA runtime and driver and a short list of C/C++ runtime functions (memory,
  math, strings, stdio for messages): nothing else (no dlopen, no files, no /proc, no system calls, no
  Python). Only the CUDA toolkit's and the system's C/C++ headers may be included{forbidden}; the kernel
  is one self-contained file.
- It times the candidate and the baseline in the same process, interleaved, many repetitions; speedup =
  baseline time / candidate time, and the headline is the geometric mean over the suite's scenarios.
- `evaluate` runs the quick subset; a candidate that beats the best is then judged on the full suite (with
  the hold-out), and only a correct one can become the best. The harness keeps the best outside your
  workspace: keep your own copies of versions you may want to return to.

Work in small steps: read the code, form a hypothesis about where the time goes, change the kernel, call
`evaluate`. When you believe you are finished, say so and explain why in a short message without calling a tool.
"""

START = "Begin. The candidate kernel is `{kernel}`; the best so far: {best}."

QUESTION, NUDGE = conversation.QUESTION, conversation.NUDGE  # the scripted model reads their beginnings

CLI_FIRST = SYSTEM + "\nYou cannot call `evaluate` yourself: edit `{kernel}` and stop; the harness judges it after " \
    "your turn and you get its report at the next one. If you change nothing, your turn counts as done.\n"


def describe_forbidden(libraries: dict[str, str]) -> str:
    """The libraries the task forbids, for the rule on headers: " (no A, B)", or nothing."""
    return f" (no {', '.join(libraries)})" if libraries else ""


def describe_best(best: dict | None) -> str:
    if not best:
        return "none yet"
    return f"candidate {best['candidate']} at {best['speedup']:.3f}x ({best['judgement']} judgement)"


def describe_target(cfg) -> str:  # noqa: ANN001 - a Configuration
    if cfg.target:
        return f"a geometric-mean speedup of {cfg.target:g}x over the baseline"
    if cfg.target_gain:
        return f"{cfg.target_gain:g} times the starting kernel's speedup"
    return "as fast as you can"
