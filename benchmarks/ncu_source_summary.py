"""Summarise the per-instruction reports that ncu_source.sh brings back: where a kernel's warps wait.

    python benchmarks/ncu_source_summary.py DIR [--top N]

DIR holds NAME-SIDE-sass.csv (and NAME-SIDE-details.txt) files. For each it prints the kernel, its
duration, issue-slot use and the share of the elapsed cycles its SMs were active (from the details
page), the executed instructions, the warp-stall samples by reason, the N instructions with the most
samples, and the spin loops: a barrier wait's retry executed far more often than the code around it, with
its share of the executed instructions and whether it polls or sleeps (a wait with a suspend hint). Where
a scenario has both sides (NAME-ours-, NAME-base-), it then compares their main loops: an iteration is the
execution count of the HGMMA lines that run the most wgmma in all, a key block of a warp; the loop's
instructions are those executed between half and 1.1 times that often (spin loops, far more often, are
left out), counted by opcode a block.
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
DETAILS = ("Duration", "Compute (SM) Throughput", "Issue Slots Busy", "Executed Ipc Active", "Elapsed Cycles",
           "SM Active Cycles")


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
    found = [m.groups() for m in map(wanted.match, path.read_text().splitlines()) if m]
    lines = [" ".join(g) for g in found]
    cycles = {name: float(value.replace(",", "")) for name, _, value in found}
    if cycles.get("Elapsed Cycles") and "SM Active Cycles" in cycles:  # idle SMs: a schedule's tail
        lines.append(f"SMs active {100 * cycles['SM Active Cycles'] / cycles['Elapsed Cycles']:.1f} % of the "
                     "elapsed cycles")
    return lines


def summarise(path: Path, top: int) -> str:
    kernel, rows = read_sass(path)
    stalls = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k] if rows else []
    total = sum(number(r[SAMPLES]) for r in rows) or 1
    executed = sum(number(r[EXECUTED]) for r in rows) or 1
    lines = [f"== {path.name}: {kernel[:150]}"]
    lines += ["   " + d for d in details(path.with_name(path.name.replace("-sass.csv", "-details.txt")))]
    lines.append(f"   instructions executed {executed / 1e6:.1f} M, stall samples {total}")
    by_reason = collections.Counter({k[6:]: sum(number(r[k]) for r in rows) for k in stalls})
    lines.append("   by reason: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_reason.most_common(8)))
    lines.append(f"   hottest {top}:")
    for r in sorted(rows, key=lambda r: -number(r[SAMPLES]))[:top]:
        reasons = sorted(((number(r[k]), k[6:]) for k in stalls), reverse=True)[:2]
        lines.append(f"     {r['Address'][-5:]} {100 * number(r[SAMPLES]) / total:5.2f}% x{number(r[EXECUTED]):>9} "
                     f"{r['Source'].strip()[:60]:60s} " + " ".join(f"{k}:{v}" for v, k in reasons if v))
    for start, end in spin_loops(rows):
        body = rows[start:end + 1]
        count = sum(number(r[EXECUTED]) for r in body)
        sleeps = any("NANOSLEEP" in r["Source"] for r in body)
        wait = next(r for r in body if "SYNCS" in r["Source"])
        lines.append(f"   spin loop {wait['Address'][-5:]}: {wait['Source'].strip()[:60]} "
                     f"x{number(rows[end][EXECUTED])} ({count / 1e6:.1f} M instructions, "
                     f"{100 * count / executed:.1f} % of all; {'sleeps' if sleeps else 'polls'})")
    return "\n".join(lines)


def spin_loops(rows: list[dict[str, str]]) -> list[tuple[int, int]]:
    """(first, last) rows of each barrier-wait retry loop: a backward branch right after a SYNCS line, taken far
    more often than the line before the loop runs. Its body is a poll (TRYWAIT, branch) or, where the wait
    passes a suspend hint, a sleep (TRYWAIT, NANOSLEEP, the phase check, branch)."""
    where = {r["Address"]: i for i, r in enumerate(rows)}
    found = []
    for i in range(1, len(rows)):
        words = rows[i]["Source"].split()
        if "BRA" not in words or "SYNCS" not in rows[i - 1]["Source"]:
            continue
        start = where.get(words[-1].rstrip(";"), -1)
        here = number(rows[i][EXECUTED])
        if 0 < start <= i - 1 and here > max(100000, 2 * number(rows[start - 1][EXECUTED])):
            found.append((start, i))
    return found


def opcode(source: str) -> str:
    """The instruction's mnemonic without its predicate; FTZ dropped (the same work either way)."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].replace(".FTZ", "") if words else "?"


def loop_opcodes(rows: list[dict[str, str]]) -> tuple[int, collections.Counter]:
    """The main loop's iterations and its opcodes a iteration. The loop is the execution count whose HGMMA
    lines run the most wgmma in all (lines x count): a causal kernel's peeled first key block has as many
    HGMMA lines as the loop, or more, and runs once a tile, fewer times than the loop on any tile of
    three blocks or more."""
    counts = collections.Counter(number(r[EXECUTED]) for r in rows if "HGMMA" in r["Source"])
    if not counts:
        return 0, collections.Counter()
    iterations = max(counts, key=lambda n: (counts[n] * n, n))
    per = collections.Counter()
    for r in rows:
        if iterations / 2 <= number(r[EXECUTED]) <= 1.1 * iterations:
            per[opcode(r["Source"])] += number(r[EXECUTED]) / iterations
    return iterations, per


def compare_loops(ours: Path, base: Path) -> str:
    (n_ours, a), (n_base, b) = loop_opcodes(read_sass(ours)[1]), loop_opcodes(read_sass(base)[1])
    name = ours.name.replace("-ours-sass.csv", "")
    if not n_ours or not n_base:
        return f"== {name}: a side has no HGMMA line, no loop to compare"
    lines = [f"== {name}, main loop a key block and warp: ours {sum(a.values()):.0f} instructions "
             f"({n_ours} iterations), base {sum(b.values()):.0f} ({n_base})"]
    for op in sorted(set(a) | set(b), key=lambda op: (-(a[op] - b[op]), op)):
        if abs(a[op] - b[op]) >= 0.95:
            lines.append(f"   {op:34s} {a[op]:6.1f} {b[op]:6.1f} {a[op] - b[op]:+6.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    files = sorted(args.dir.glob("*-sass.csv"))
    if not files:
        sys.exit(f"{args.dir}: no *-sass.csv files (ncu_source.sh writes them into ncu.tgz)")
    pairs = [(f, f.with_name(f.name.replace("-ours-", "-base-"))) for f in files if "-ours-sass" in f.name]
    try:
        print("\n\n".join(summarise(f, args.top) for f in files))
        for ours, base in pairs:
            if base.exists():
                print("\n" + compare_loops(ours, base))
    except ValueError as err:
        sys.exit(str(err))


if __name__ == "__main__":
    main()
