"""How sure a verdict is: the counts, their intervals and a test, in plain arithmetic (no SciPy).

    rate_interval(k, n)        the rate k/n with a 95% Jeffreys interval (the Beta(k + 1/2, n - k + 1/2)
                               posterior's 2.5% and 97.5% points)
    difference_interval(...)   the difference of two such rates with its 95% interval, from seeded draws of
                               the two posteriors (deterministic: the same counts give the same interval)
    one_sided_p(a, n, b, m)    the exact permutation test (Fisher's) that the first rate exceeds the second:
                               the chance, relabelling the n + m trials at random, of a first-group count of
                               at least a
    compare(...)               all of it for two groups, with the verdict the numbers allow

A verdict needs MIN_LARGE_GAINS large gains at least; below that it is "insufficient evidence", whatever the
rates. With enough, the claim is *supported* when the difference's interval lies above zero, *contradicted*
when it lies below, and *not settled* otherwise.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

MIN_LARGE_GAINS = 5
LEVEL = 0.95
DRAWS = 20_000


def _quantiles(alpha: float, beta: float, probabilities: tuple[float, ...], rng: random.Random) -> list[float]:
    draws = sorted(rng.betavariate(alpha, beta) for _ in range(DRAWS))
    return [draws[min(int(p * DRAWS), DRAWS - 1)] for p in probabilities]


def _rng(*counts: int) -> random.Random:
    return random.Random(hash(counts) & 0xFFFFFFFF)


def rate_interval(k: int, n: int) -> tuple[float | None, float, float]:
    """(k/n or None, low, high): the 95% Jeffreys interval; [0, 1] without trials."""
    if n <= 0:
        return None, 0.0, 1.0
    low, high = _quantiles(k + 0.5, n - k + 0.5, ((1 - LEVEL) / 2, (1 + LEVEL) / 2), _rng(k, n))
    return k / n, low, high


def difference_interval(a: int, n: int, b: int, m: int) -> tuple[float | None, float, float]:
    """(a/n - b/m or None, low, high) from the two Jeffreys posteriors."""
    rng = _rng(a, n, b, m)
    diffs = sorted(rng.betavariate(a + 0.5, n - a + 0.5) - rng.betavariate(b + 0.5, m - b + 0.5) for _ in range(DRAWS))
    low, high = diffs[int((1 - LEVEL) / 2 * DRAWS)], diffs[min(int((1 + LEVEL) / 2 * DRAWS), DRAWS - 1)]
    point = a / n - b / m if n and m else None
    return point, low, high


def one_sided_p(a: int, n: int, b: int, m: int) -> float | None:
    """P(first-group successes >= a) under random relabelling (hypergeometric); None without both groups."""
    if n <= 0 or m <= 0:
        return None
    total, successes = n + m, a + b
    denominator = math.comb(total, n)
    tail = sum(math.comb(successes, x) * math.comb(total - successes, n - x)
               for x in range(a, min(successes, n) + 1))
    return min(1.0, tail / denominator)


@dataclass
class Comparison:
    """Group A (e.g. layer-shift and reject-limit questions) against group B (e.g. inform questions): how
    many trials of each were followed by a large gain."""

    a_label: str
    a_large: int
    a_trials: int
    b_label: str
    b_large: int
    b_trials: int
    large_gains: int  # all large gains counted (the evidence's size)

    @property
    def enough(self) -> bool:
        return self.large_gains >= MIN_LARGE_GAINS

    def to_dict(self) -> dict[str, Any]:
        a_rate, a_low, a_high = rate_interval(self.a_large, self.a_trials)
        b_rate, b_low, b_high = rate_interval(self.b_large, self.b_trials)
        diff, d_low, d_high = difference_interval(self.a_large, self.a_trials, self.b_large, self.b_trials)
        p = one_sided_p(self.a_large, self.a_trials, self.b_large, self.b_trials)
        return {"a": {"label": self.a_label, "large": self.a_large, "trials": self.a_trials, "rate": _r(a_rate),
                      "interval": [_r(a_low), _r(a_high)]},
                "b": {"label": self.b_label, "large": self.b_large, "trials": self.b_trials, "rate": _r(b_rate),
                      "interval": [_r(b_low), _r(b_high)]},
                "difference": _r(diff), "difference_interval": [_r(d_low), _r(d_high)], "level": LEVEL,
                "one_sided_p": _r(p), "large_gains": self.large_gains, "min_large_gains": MIN_LARGE_GAINS,
                "outcome": self.outcome()}

    def outcome(self) -> str:
        """"insufficient evidence", "supported", "contradicted" or "not settled"."""
        if not self.enough:
            return "insufficient evidence"
        _, low, high = difference_interval(self.a_large, self.a_trials, self.b_large, self.b_trials)
        if self.a_trials and self.b_trials and low > 0:
            return "supported"
        if self.a_trials and self.b_trials and high < 0:
            return "contradicted"
        return "not settled"

    def sentence(self) -> str:
        """The counts, the rates with their intervals, the difference and the test, in one line."""
        d = self.to_dict()
        a, b = d["a"], d["b"]

        def rate(g: dict[str, Any]) -> str:
            if g["rate"] is None:
                return f"{g['large']}/{g['trials']} {g['label']}"
            return f"{g['large']}/{g['trials']} {g['label']} ({g['rate']:.2f}, 95% interval {g['interval'][0]:.2f}-" \
                   f"{g['interval'][1]:.2f})"

        text = f"a large gain followed {rate(a)} and {rate(b)}"
        if d["difference"] is not None:
            text += (f"; difference {d['difference']:+.2f} (95% interval {d['difference_interval'][0]:+.2f} to "
                     f"{d['difference_interval'][1]:+.2f}), one-sided permutation test p = {d['one_sided_p']:.3f}")
        return text


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
