"""Speed of light: a time no kernel can reach is not a measurement, it is a hole in the judge.

Two floors per scenario, each from a number the task states and one the checker measures or reads:
- memory: the task's `bytes_moved`, at the bandwidth of a plain copy over the same footprint as the
  timed rotation (so that the copy sits in the same level of the cache hierarchy the timed calls
  did: HBM when the rotation is several times the L2, the L2 when it fits). A kernel must read its
  inputs and write its outputs; it cannot do that `MEMORY_SLACK` times faster than a copy of them.
- compute (GPUs): the task's `flops` at the tensor cores' dense peak for the task's `compute_dtype`,
  from the SM count and the highest SM clock the device reports.
A candidate time below either floor fails the scenario, naming the floor and the measured time.

A third check is on what the timed interval left behind: after each timed replay the host waits for the
whole device, and measures how long that took (`outlived`). Work that runs on after the timed stream
has finished (a kernel a launcher started on a stream of its own, fed by a trigger in the timed call)
shows there, and fails the scenario. The host's own answer time is measured the same way on the
baselines, in the same interleaved trials, and only the candidate's excess over it counts: a slow host
(a descheduled thread, a busy driver) delays both sides alike, and must not fail an honest kernel.
"""

from __future__ import annotations

MEMORY_SLACK = 1.5  # a kernel may beat torch's copy by a little (vector width, no launch tail); not by this
# dense tensor-core FLOPs per SM per clock (public peak rates divided by SMs and boost clock: H100 SXM
# 989 TFLOP/s bf16 over 132 SMs at 1.83 GHz is 4096; Blackwell doubles the rate per SM)
DENSE_FLOP_PER_SM_CLOCK = {
    "sm90": {"tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192},
    "sm100": {"tf32": 4096, "fp16": 8192, "bf16": 8192, "fp8": 16384, "fp4": 32768},
}


def peak_flops(arch: str, dtype: str | None, sms: int | None, max_clock_mhz: float | None) -> float | None:
    """The dense tensor-core peak in FLOP/s, or None where it is not known (a CPU, an unknown dtype)."""
    rate = DENSE_FLOP_PER_SM_CLOCK.get(arch, {}).get(dtype or "")
    if not rate or not sms or not max_clock_mhz:
        return None
    return rate * sms * max_clock_mhz * 1e6


def speed_of_light(time_s: float, *, bytes_moved: float | None, copy_bandwidth: float | None,
                   flops: float | None, peak: float | None) -> str | None:
    """Why `time_s` is below a physical floor, or None when it is not."""
    if bytes_moved and copy_bandwidth:
        floor = bytes_moved / copy_bandwidth / MEMORY_SLACK
        if time_s < floor:
            return (f"invalid timing: {time_s * 1e6:.3g} us per call is below the memory floor of {floor * 1e6:.3g} us "
                    f"({bytes_moved / 1e6:.3g} MB at {MEMORY_SLACK}x the {copy_bandwidth / 1e9:.0f} GB/s a copy of the "
                    "same footprint reached): the work was not done in the timed call")
    if flops and peak:
        floor = flops / peak
        if time_s < floor:
            return (f"invalid timing: {time_s * 1e6:.3g} us per call is below the compute floor of {floor * 1e6:.3g} us "
                    f"({flops / 1e9:.3g} GFLOP at the device's {peak / 1e12:.0f} TFLOP/s peak): the work was not done "
                    "in the timed call")
    return None


# A device-wide synchronize on an idle GPU returns within a few microseconds; host jitter stays well under
# this. Work that outlives the timed call by more, or by more than half the call's own time, is not noise.
LAG_ALLOWED_S = 50e-6
LAG_FRACTION = 0.5


def outlived(time_s: float, lag_s: float, host_lag_s: float = 0.0) -> str | None:
    """Why the device still working `lag_s` after a timed call of `time_s` ended invalidates it, or None.
    `host_lag_s`: the same wait measured after the baselines' calls (which leave nothing running), the
    host's own share of `lag_s`."""
    excess = lag_s - max(host_lag_s, 0.0)
    if excess > max(LAG_ALLOWED_S, LAG_FRACTION * time_s):
        beside = f", {host_lag_s * 1e6:.3g} us after the baseline's" if host_lag_s > 0 else ""
        return (f"invalid timing: the device went on working {lag_s * 1e6:.3g} us per call after the timed call of "
                f"{time_s * 1e6:.3g} us had ended{beside} (a kernel outside the timed stream): the work must be done "
                "in the timed call")
    return None
