"""The plots of benchmarks/README.md, drawn from the kept judgements in benchmarks/results/ (no GPU needed):

    python benchmarks/plot_results.py [--out benchmarks/plots]

- speedup_by_group.png: each group's geometric-mean speedup over the headline baseline (FA3 for
  flash_attn_fwd, torch.compile for add_rmsnorm), the shipped kernels' latest judgements.
- roofline_flash_attn_fwd.png, roofline_add_rmsnorm.png: every suite scenario's achieved FLOP/s against its
  arithmetic intensity, under the two floors the judge enforces (kernelseek/harness/floors.py): the bf16
  tensor-core peak of the judging card and the bytes a scenario must move at the card's measured copy
  bandwidth. flash_attn_fwd's task states no memory floor, so its bytes here are the least a kernel must
  move (q, k, v read once, out and lse written once) and its bandwidth is the one the add_rmsnorm
  judgement measured on the same card.
Needs matplotlib (`pip install matplotlib`).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kernelseek.harness.compare import load_judgement as load  # noqa: E402
from kernelseek.harness.floors import peak_flops  # noqa: E402
from kernelseek.harness.task import load_task  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
ATTENTION = RESULTS / "v80-sm90-full-holdout24-s83-h100.json.gz"
ATTENTION_H200 = RESULTS / "v67-sm90-full-holdout24-s2-h200.json"
RMSNORM = RESULTS / "add_rmsnorm-v5-sm90-full-h100.json"
BF16, FP32 = 2, 4


def card(report: dict) -> str:
    return report["device"]["name"].replace("NVIDIA ", "").split(" ")[0]


def card_peak(report: dict) -> float:
    """The bf16 dense peak (FLOP/s) of the card the judgement ran on, as the judge computes it."""
    device = report["device"]
    mhz = float(device["clocks"]["clocks.max.sm"].split()[0])
    return peak_flops(report["arch"], "bf16", device["sms"], mhz)


def attention_bytes(params: dict) -> float:
    """The least bytes one attention call moves: q, k, v read once, out and lse written once."""
    pairs = zip(params["seqlens_q"], params["seqlens_k"], strict=True) if params["layout"] == "varlen" else \
        [(params["seqlen_q"], params["seqlen_k"])] * params["batch"]
    d, hq, hkv = params["head_dim"], params["heads_q"], params["heads_kv"]
    return float(sum(BF16 * (2 * sq * hq * d + 2 * sk * hkv * d) + FP32 * sq * hq for sq, sk in pairs))


def speedup_by_group(ax, report: dict, title: str) -> None:
    groups = report["groups"]
    names = list(groups)
    values = [groups[n]["speedup"] for n in names]
    ax.bar(names, values, color=["tab:green" if v >= 1 else "tab:orange" for v in values])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_title(f"{title}: suite {report['speedup']:.3f}x ({card(report)})", fontsize=10)
    ax.set_ylabel(f"geomean speedup over {report['baseline']}")
    ax.tick_params(axis="x", labelrotation=45)
    for i, v in enumerate(values):
        ax.text(i, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)


def roofline(ax, report: dict, task_name: str, bandwidth: float, bytes_of) -> None:
    """Achieved FLOP/s per suite scenario against FLOP/byte, under the compute and memory floors."""
    task = load_task(task_name)
    peak = card_peak(report)
    points: dict[str, list[tuple[float, float]]] = {}
    for s in report["scenarios"]:
        if s.get("holdout") or not s.get("correct"):
            continue
        scenario = task.find(report["arch"], s["scenario"])
        flops, moved = task.flops(scenario), bytes_of(scenario)
        if flops <= 0 or not moved:
            continue
        points.setdefault(s["group"], []).append((flops / moved, flops / s["time_s"]["candidate"]))
    for group, xy in sorted(points.items()):
        ax.scatter([x for x, _ in xy], [y / 1e12 for _, y in xy], s=12, label=group)
    lo = min(x for xy in points.values() for x, _ in xy) / 2
    hi = max(x for xy in points.values() for x, _ in xy) * 2
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(peak, bandwidth * x) / 1e12 for x in xs], color="black", linewidth=1)
    knee = peak / bandwidth
    if knee < hi:  # the compute floor is inside the plot
        ax.text(hi, peak / 1e12, f"bf16 peak {peak / 1e12:.0f} TFLOP/s", va="bottom", ha="right", fontsize=8)
    x = math.sqrt(lo * min(knee, hi))
    ax.text(x, bandwidth * x / 1e12, f"copy {bandwidth / 1e12:.2f} TB/s", rotation=30, fontsize=8, ha="center",
            va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(f"{task_name} {Path(report['kernel']).name} on the {card(report)}: suite scenarios", fontsize=10)
    ax.legend(fontsize=7, ncol=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "plots")
    args = parser.parse_args()
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_results.py needs matplotlib: pip install matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    attention, attention_h200, rmsnorm = load(ATTENTION), load(ATTENTION_H200), load(RMSNORM)
    args.out.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5), gridspec_kw={"width_ratios": [9, 9, 7]})
    speedup_by_group(axes[0], attention, "flash_attn_fwd v80")
    speedup_by_group(axes[1], attention_h200, "flash_attn_fwd v67")
    speedup_by_group(axes[2], rmsnorm, "add_rmsnorm v5")
    fig.tight_layout()
    fig.savefig(args.out / "speedup_by_group.png", dpi=80)

    bandwidth = rmsnorm["floor"]["copy_bandwidth_Bps"]  # measured on the H100 both judgements ran on
    rms_task = load_task("add_rmsnorm")
    for name, report, bytes_of in (
            ("flash_attn_fwd", attention, lambda scenario: attention_bytes(scenario.params)),
            ("add_rmsnorm", rmsnorm, rms_task.bytes_moved)):
        fig, ax = plt.subplots(figsize=(7, 5))
        roofline(ax, report, name, bandwidth, bytes_of)
        fig.tight_layout()
        fig.savefig(args.out / f"roofline_{name}.png", dpi=80)
    for path in sorted(args.out.glob("*.png")):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
