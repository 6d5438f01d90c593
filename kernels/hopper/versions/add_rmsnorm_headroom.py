"""How far a judged add_rmsnorm kernel is from issue 18's 1.2x `torch.compile` bar, and where the rest
would have to come from, read from a judgement's JSON (no GPU):

    python kernels/hopper/versions/add_rmsnorm_headroom.py evals/results/add_rmsnorm-v3-sm90-full.json

Bandwidth-bound scenarios (torch.compile at >= half the copy floor) can gain at most 1 / its floor
fraction even at the full copy bandwidth; the geomean the other, latency-bound scenarios would then need
for 1.2x over the suite is printed, beside what the kernel reached there and the shortest times.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

BAR = 1.2


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(path: str) -> None:
    judged = json.loads(Path(path).read_text())
    suite = [s for s in judged["scenarios"] if s.get("speedup") and not s["scenario"].startswith("holdout")]
    bound = [s for s in suite if s["floor_fraction"]["torch_compile"] >= 0.5]
    latency = [s for s in suite if s["floor_fraction"]["torch_compile"] < 0.5]
    ceiling = geomean([1 / s["floor_fraction"]["torch_compile"] for s in bound])
    needed = math.exp((len(suite) * math.log(BAR) - len(bound) * math.log(ceiling)) / len(latency))
    print(f"{judged['kernel']} on {judged['device']['name']}: suite {geomean([s['speedup'] for s in suite]):.3f}x "
          f"torch.compile over {len(suite)} scenarios")
    print(f"bandwidth-bound ({len(bound)}): {geomean([s['speedup'] for s in bound]):.3f}x; at the full copy "
          f"bandwidth at most {ceiling:.3f}x")
    print(f"latency-bound ({len(latency)}): {geomean([s['speedup'] for s in latency]):.3f}x; {BAR}x over the suite "
          f"needs at least {needed:.3f}x here")
    print("shortest latency-bound scenarios (us: kernel, torch.compile):")
    for s in sorted(latency, key=lambda s: s["time_s"]["torch_compile"])[:6]:
        t = s["time_s"]
        print(f"  {s['scenario']:<28} {t['candidate'] * 1e6:5.2f} {t['torch_compile'] * 1e6:5.2f}  {s['speedup']:.3f}x")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        sys.exit("usage: add_rmsnorm_headroom.py JUDGEMENT.json (an add_rmsnorm judgement under evals/results/)")
    main(sys.argv[1])
