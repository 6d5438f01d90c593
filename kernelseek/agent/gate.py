"""The gate's noise rule: when a quick reading is *clearly* slower than the best's.

A quick judgement times a handful of scenarios; two quick readings of the same kernel can differ by more
than a real gain (on the CPU task the seed read anywhere from 1.88x to 3.01x across runs). So a candidate
is not ruled out because its quick speedup is merely below the best's: it is ruled out only when it is
below by more than the measured noise of the two readings.

The noise of one judgement is read from what the judge recorded: each timed scenario has a `spread` per
implementation, (p90 - p10) / median over its trials. The spread of a speedup (baseline time /
candidate time) is at most the sum of the two spreads; the judgement's noise is the median of that sum
over its timed scenarios. The band is the sum of the candidate's and the best's noise, never below
`MIN_BAND` (run-to-run drift that no single judgement's trials show) and never above `MAX_BAND`:

    clearly slower  <=>  quick speedup < best's quick speedup * (1 - band)
"""

from __future__ import annotations

import statistics
from typing import Any

MIN_BAND = 0.10  # a quick reading within 10% of the best's is never "clearly slower"
MAX_BAND = 0.50  # however noisy the readings, half the best's quick speedup is clearly slower


def judgement_noise(scenarios: list[dict[str, Any]]) -> float | None:
    """The typical relative spread of a speedup in one judgement, from its scenarios' recorded spreads."""
    sums = []
    for result in scenarios:
        spread = result.get("spread")
        if not result.get("speedup") or not isinstance(spread, dict) or not spread:
            continue
        values = [float(v) for v in spread.values() if isinstance(v, int | float) and not isinstance(v, bool)]
        if values:
            sums.append(sum(values))
    return round(statistics.median(sums), 4) if sums else None


def band(candidate_noise: float | None, best_noise: float | None) -> float:
    """How far below the best's quick reading a candidate may read and still be fully judged."""
    measured = (candidate_noise or 0.0) + (best_noise or 0.0)
    return min(max(measured, MIN_BAND), MAX_BAND)


def clearly_slower(quick: dict[str, Any], best: dict[str, Any] | None) -> bool:
    """True when the candidate's quick reading is below the best's by more than the band."""
    if best is None or not best.get("quick_speedup"):
        return False
    speedup = quick.get("speedup")
    if not speedup:
        return True  # correct but untimed: nothing says it is faster
    return speedup < best["quick_speedup"] * (1.0 - band(quick.get("noise"), best.get("quick_noise")))


def beats_best(full: dict[str, Any], best: dict[str, Any] | None) -> bool:
    """True when a correct full judgement would replace `best`: no best yet, a best judged only quickly,
    or a higher full-suite speedup."""
    return best is None or best.get("judgement") != "full" or (full.get("speedup") or 0) > (best.get("speedup") or 0)
