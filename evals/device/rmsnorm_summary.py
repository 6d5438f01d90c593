"""Summarize add_rmsnorm judgements (the JSONs `kernelseek eval` wrote) against issue 18's bars:
correct on every scenario, the geomean speedup over torch.compile (and eager beside it), the
fraction of the memory floor reached, over the suite and over the scenarios with rows >= 4096, and
where the 1.2x bar would have to come from (`headroom`).

    python3 evals/device/rmsnorm_summary.py evals/results/add_rmsnorm-*-sm90-full.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from kernelseek.harness import load_task

BAR = 1.2  # issue 18: the geomean over torch.compile


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def headroom(suite: list[dict], bar: float = BAR) -> list[str]:
    """Where the bar would have to come from: bandwidth-bound scenarios (torch.compile at half the copy
    floor or more) gain at most 1 / its floor fraction even at the full copy bandwidth; the rest would then
    need the geomean printed; and the shortest of them, where both kernels are latency, not bytes."""
    bound = [s for s in suite if s["floor_fraction"].get("torch_compile", 0) >= 0.5]
    latency = [s for s in suite if s["floor_fraction"].get("torch_compile", 0) < 0.5]
    ceiling = geomean([1 / s["floor_fraction"]["torch_compile"] for s in bound])
    lines = [f"  {bar}x bar: bandwidth-bound ({len(bound)}) {fmt(geomean([s['speedup'] for s in bound]))}x, at the "
             f"full copy bandwidth at most {fmt(ceiling)}x"]
    if latency:
        needed = math.exp((len(suite) * math.log(bar) - len(bound) * math.log(ceiling or 1)) / len(latency))
        lines.append(f"  latency-bound ({len(latency)}) {fmt(geomean([s['speedup'] for s in latency]))}x; {bar}x over "
                     f"the suite needs at least {needed:.3f}x here")
        timed = sorted((s for s in latency if "time_s" in s), key=lambda s: s["time_s"]["torch_compile"])
        lines += [f"    {s['scenario']:<24} {s['time_s']['candidate'] * 1e6:.2f} us against torch.compile's "
                  f"{s['time_s']['torch_compile'] * 1e6:.2f} ({s['speedup']:.3f}x)" for s in timed[:3]]
    return lines


def fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else f"{value:{spec}}"


def summarize(path: Path) -> list[str]:
    report = json.loads(path.read_text())
    suite = [s for s in report["scenarios"] if not s.get("holdout")]
    held = [s for s in report["scenarios"] if s.get("holdout")]
    rows = {s.name: s.params["rows"] for s in load_task("add_rmsnorm").scenarios(report["arch"])}
    big = [s for s in suite if s.get("floor_fraction") and rows.get(s["scenario"], 0) >= 4096]
    fractions = [s["floor_fraction"]["candidate"] for s in big]
    eager = geomean([s.get("speedup_beside", {}).get("eager") for s in suite])
    floor = report.get("floor") or {}
    lines = [f"{path.name}: {report['kernel']} ({report.get('sha256', '')[:8]}), {report['judgement']} judgement, "
             f"{'CORRECT' if report['correct'] else 'INCORRECT: ' + str(report.get('reason'))}",
             f"  suite: {sum(bool(s.get('correct')) for s in suite)}/{len(suite)} correct; geomean "
             f"{fmt(report.get('speedup'))}x torch.compile, {fmt(eager)}x eager; floor fraction (all) "
             f"{fmt(floor.get('fraction'))}, copy bandwidth {fmt((floor.get('copy_bandwidth_Bps') or 0) / 1e12, '.2f')} TB/s",
             f"  rows >= 4096 ({len(big)} scenarios): floor fraction geomean {fmt(geomean(fractions))}, min "
             f"{fmt(min(fractions) if fractions else None)}; speedup geomean "
             f"{fmt(geomean([s.get('speedup') for s in big]))}x"]
    baseline = geomean([s["floor_fraction"].get("torch_compile") for s in big])
    lines.append(f"  torch.compile's own floor fraction on rows >= 4096: {fmt(baseline)}")
    lines += headroom([s for s in suite if s.get("floor_fraction") and s.get("speedup")])
    for name, g in report.get("groups", {}).items():
        lines.append(f"    {name:12s} {g['correct']}/{g['n']}  {fmt(g.get('speedup'))}x  floor {fmt(g.get('floor_fraction'), '.2f')}")
    if held:
        h = report.get("holdout") or {}
        lines.append(f"  hold-out (seed {h.get('seed')}): {h.get('correct')}/{h.get('n')} correct, geomean "
                     f"{fmt(h.get('speedup'))}x, floor {fmt(floor.get('holdout_fraction'))}")
    failed = [s for s in report["scenarios"] if not s.get("correct")]
    lines += [f"  FAILED {s['scenario']}: {s.get('reason')}" for s in failed[:10]]
    return lines


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python3 evals/device/rmsnorm_summary.py REPORT.json...")
    for arg in sys.argv[1:]:
        print("\n".join(summarize(Path(arg))))
