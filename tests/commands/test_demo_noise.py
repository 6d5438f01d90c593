"""`kernelseek demo` on a CPU states the noise of its headline, measured from the judge's own trials."""

from kernelseek.commands.demo import noise_line
from kernelseek.harness.judge import Judgement


def _verdict(spreads: list[dict]) -> Judgement:
    return Judgement(task="t", kernel="k.cpp", arch="cpu", judgement="quick", correct=True, speedup=1.1,
                     reason=None, baseline="torch",
                     scenarios=[{"scenario": f"s{i}", "spread": s} for i, s in enumerate(spreads)]
                     + [{"scenario": "h", "holdout": True, "spread": {"candidate": 9.0, "torch": 9.0}}])


def test_the_noise_is_the_median_and_largest_band_of_the_suite():
    line = noise_line(_verdict([{"candidate": 0.10, "torch": 0.05}, {"candidate": 0.30, "torch": 0.20},
                                {"candidate": 1.30, "torch": 0.84}]))
    # bands 15%, 50%, 214%: the hold-out scenario's 1800% is not part of the headline
    assert line is not None and "by 50% (median; up to 214%" in line and "torch" in line


def test_no_recorded_spread_says_nothing():
    assert noise_line(_verdict([])) is None
