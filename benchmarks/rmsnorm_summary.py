"""Summarize add_rmsnorm judgements (the JSONs `kernelseek eval` wrote) against issue 18's bars:
correct on every scenario, the geomean speedup over torch.compile (and eager beside it), the
fraction of the memory floor reached, over the suite and over the scenarios with rows >= 4096, and
where the 1.2x bar would have to come from (`headroom`; with --launch-floor, `launch_bound` too).

    python3 benchmarks/rmsnorm_summary.py benchmarks/results/add_rmsnorm-*-sm90-full.json
    python3 benchmarks/rmsnorm_summary.py benchmarks/results/add_rmsnorm-v5-sm90-full-h100.json \
        --launch-floor benchmarks/results/add_rmsnorm-launch-floor-h100.txt
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


def latency_bound(suite: list[dict]) -> list[dict]:
    """The scenarios torch.compile runs below half the copy floor: launch and latency, not bytes."""
    return [s for s in suite if s["floor_fraction"].get("torch_compile", 0) < 0.5]


def headroom(suite: list[dict], bar: float = BAR) -> list[str]:
    """Where the bar would have to come from: bandwidth-bound scenarios (torch.compile at half the copy
    floor or more) gain at most 1 / its floor fraction even at the full copy bandwidth; the rest would then
    need the geomean printed; and the shortest of them, where both kernels are latency, not bytes."""
    latency = latency_bound(suite)
    bound = [s for s in suite if s not in latency]
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


def launch_floor_table(text: str) -> dict[str, dict[str, float]]:
    """The rows of rmsnorm_launch_floor.py's output: scenario -> {column: microseconds a call}."""
    lines = text.splitlines()
    columns = next(line.split()[1:-3] for line in lines if line.startswith("scenario "))  # less "torch.compile / empty"
    rows = {}
    for line in lines:
        cells = line.split()
        if len(cells) == len(columns) + 2 and cells[-1].endswith("x") and not line.startswith("scenario "):
            rows[cells[0]] = dict(zip(columns, map(float, cells[1:-1]), strict=True))
    return rows


def launch_bound(suite: list[dict], table: dict[str, dict[str, float]], bar: float = BAR) -> list[str]:
    """The bar against the launch floor: every scenario the table timed at an empty kernel's launch + the
    fastest one-row body it saw (any implementation's time over the empty kernel's) + its bytes at the copy
    bandwidth; what the rest of the suite would then need, as a fraction of the copy floor."""
    timed = [s for s in suite if s["scenario"] in table]
    rest = [s for s in suite if s["scenario"] not in table]
    one_row = [row for name, row in table.items() if name.endswith("_r1")]
    body = min(min(v for k, v in row.items() if k != "empty") - row["empty"] for row in one_row)
    ideal = [s["time_s"]["torch_compile"] / ((table[s["scenario"]]["empty"] + body) * 1e-6 + s["floor_s"]) for s in timed]
    needed = math.exp((len(suite) * math.log(bar) - sum(map(math.log, ideal))) / len(rest))
    compile_fraction = geomean([s["floor_fraction"]["torch_compile"] for s in rest])
    ours = geomean([s["floor_fraction"]["candidate"] for s in rest])
    return [f"  launch floor: {len(timed)} scenarios at launch + {body:.2f} us + their bytes would be "
            f"{geomean(ideal):.3f}x torch.compile (this kernel {fmt(geomean([s['speedup'] for s in timed]))}x);",
            f"  {bar}x over the suite would then need the other {len(rest)} at {needed * compile_fraction:.3f} of the "
            f"copy floor (torch.compile {compile_fraction:.3f}, this kernel {fmt(ours)})"]


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
    args = sys.argv[1:]
    floor_txt = None
    if "--launch-floor" in args:
        at = args.index("--launch-floor")
        floor_txt, args = Path(args[at + 1]), args[:at] + args[at + 2:]
    if not args:
        sys.exit("usage: python3 benchmarks/rmsnorm_summary.py REPORT.json... [--launch-floor FLOOR.txt]")
    for arg in args:
        print("\n".join(summarize(Path(arg))))
        if floor_txt:
            suite = [s for s in json.loads(Path(arg).read_text())["scenarios"] if not s.get("holdout")]
            print("\n".join(launch_bound(suite, launch_floor_table(floor_txt.read_text()))))
