"""Mutants of add_rmsnorm_v2_model.py: each plants one bug of the kind the kernel could have, and the model
must catch it; the control (accesses narrower than allowed, still correct) must pass.

Run from the repository root:  PYTHONPATH=$PWD python kernels/hopper/versions/add_rmsnorm_v2_model_mutants.py
Exit status 0 when every mutant is caught and the unmutated model and the control pass.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import add_rmsnorm_v2_model as model  # noqa: E402

from evals.tasks.add_rmsnorm import scenarios as suites  # noqa: E402

SOURCE = Path(model.__file__).read_text()
SCENARIOS = [s for s in suites.sanitize("sm90") if s.group in ("tiny", "unaligned", "odd")]
BASES_2_OFF = [0x7F0000000002 + 0x10000000 * k for k in range(5)]

# (what the model's code says, the bug, a name)
MUTANTS = [
    ("e = t if t < head else t + 8 * chunks", "e = t if t < head else t + 8 * chunks - 1", "tail index off by one"),
    ("extras = hidden - 8 * chunks if launch.any else 0", "extras = hidden - 8 * chunks - head if launch.any else 0",
     "extras forget the head"),
    ("threads = (vecs + 31) // 32 * 32 or 32", "threads = vecs // 32 * 32 or 32", "short-row threads rounded down"),
    ("head = min(((0 - (xr >> 1)) & 0xFFFFFFFF) & 7, hidden)", "head = ((0 - (xr >> 1)) & 0xFFFFFFFF) & 7",
     "head not clamped to hidden"),
    ("widths = {k: (chunk_width(a) if launch.any else 16)", "widths = {k: 16", "every access 16 bytes"),
]


def passes(namespace: dict) -> str | None:
    """None if the (possibly mutated) model accepts the scenarios and a 3-element row 2 bytes off; else why not."""
    try:
        for s in SCENARIOS:
            rows, hidden, strides, res, bases = namespace["scenario_case"](s)
            namespace["check_case"](rows, hidden, strides, res, bases, s.name)
        namespace["check_case"](3, 3, [5] * 4, True, BASES_2_OFF, "hidden 3, pointers 2 bytes off")
    except model.Violation as v:
        return str(v)
    return None


def load(source: str) -> dict:
    namespace: dict = {"__name__": model.__name__}  # a dataclass looks its module up in sys.modules
    exec(compile(source, "mutant", "exec"), namespace)
    namespace["Violation"] = model.Violation
    return namespace


def main() -> int:
    failures = 0
    verdict = passes(load(SOURCE))
    print(f"unmutated: {'passes' if verdict is None else 'FAILS: ' + verdict}")
    failures += verdict is not None
    control = SOURCE.replace("return a & (-a & 0xFFFFFFFF)", "return min(a & (-a & 0xFFFFFFFF), 8)")
    assert control != SOURCE
    verdict = passes(load(control))
    print(f"control (widths capped at 8 bytes): {'passes' if verdict is None else 'FAILS: ' + verdict}")
    failures += verdict is not None
    for old, new, name in MUTANTS:
        assert old in SOURCE, old
        ns = load(SOURCE.replace(old, new))
        ns["Violation"] = model.Violation
        verdict = passes(ns)
        print(f"mutant '{name}': {'NOT CAUGHT' if verdict is None else 'caught: ' + verdict[:100]}")
        failures += verdict is None
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
