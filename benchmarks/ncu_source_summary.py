"""Summarise the per-instruction reports that ncu_source.sh brings back: where a kernel's warps wait.

    python benchmarks/ncu_source_summary.py DIR [--top N]

DIR holds NAME-SIDE-sass.csv (and NAME-SIDE-details.txt) files. For each it prints the kernel, its
duration and issue-slot use (from the details page), the executed instructions, the warp-stall samples
by reason, the N instructions with the most samples, and the spin loops: two-instruction loops executed
far more often than the code around them (a barrier polled rather than slept on).
"""

from __future__ import annotations

import argparse
import collections
import csv
import re
import sys
from pathlib import Path

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
DETAILS = ("Duration", "Compute (SM) Throughput", "Issue Slots Busy", "Executed Ipc Active")


def read_sass(path: Path) -> tuple[str, list[dict[str, str]]]:
    rows = list(csv.reader(path.open()))
    if len(rows) < 3 or rows[1][:2] != ["Address", "Source"]:
        raise ValueError(f"{path}: not an `ncu --page source --csv` export (its first lines: {rows[:2]!r:.200})")
    header = rows[1]
    return rows[0][1], [dict(zip(header, r[:len(header)], strict=True)) for r in rows[2:] if len(r) >= len(header)]


def number(text: str) -> int:
    return int(text) if text and text.strip("-") else 0


def details(path: Path) -> list[str]:
    if not path.exists():
        return []
    wanted = re.compile(r"^\s+(" + "|".join(re.escape(d) for d in DETAILS) + r")\s+(\S+)\s+([\d.,]+)\s*$")
    return [" ".join(m.groups()) for m in map(wanted.match, path.read_text().splitlines()) if m]


def summarise(path: Path, top: int) -> str:
    kernel, rows = read_sass(path)
    stalls = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k] if rows else []
    total = sum(number(r[SAMPLES]) for r in rows) or 1
    lines = [f"== {path.name}: {kernel[:150]}"]
    lines += ["   " + d for d in details(path.with_name(path.name.replace("-sass.csv", "-details.txt")))]
    lines.append(f"   instructions executed {sum(number(r[EXECUTED]) for r in rows) / 1e6:.1f} M, "
                 f"stall samples {total}")
    by_reason = collections.Counter({k[6:]: sum(number(r[k]) for r in rows) for k in stalls})
    lines.append("   by reason: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_reason.most_common(8)))
    lines.append(f"   hottest {top}:")
    for r in sorted(rows, key=lambda r: -number(r[SAMPLES]))[:top]:
        reasons = sorted(((number(r[k]), k[6:]) for k in stalls), reverse=True)[:2]
        lines.append(f"     {r['Address'][-5:]} {100 * number(r[SAMPLES]) / total:5.2f}% x{number(r[EXECUTED]):>9} "
                     f"{r['Source'].strip()[:60]:60s} " + " ".join(f"{k}:{v}" for v, k in reasons if v))
    for i in range(2, len(rows)):
        here, outside = number(rows[i][EXECUTED]), number(rows[i - 2][EXECUTED])
        if "BRA" in rows[i]["Source"] and "SYNCS" in rows[i - 1]["Source"] and \
                number(rows[i - 1][EXECUTED]) == here > max(100000, 2 * outside):
            lines.append(f"   spin loop {rows[i - 1]['Address'][-5:]}: {rows[i - 1]['Source'].strip()[:60]} "
                         f"x{here} ({2 * here / 1e6:.1f} M instructions)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    files = sorted(args.dir.glob("*-sass.csv"))
    if not files:
        sys.exit(f"{args.dir}: no *-sass.csv files (ncu_source.sh writes them into ncu.tgz)")
    try:
        print("\n\n".join(summarise(f, args.top) for f in files))
    except ValueError as err:
        sys.exit(str(err))


if __name__ == "__main__":
    main()
