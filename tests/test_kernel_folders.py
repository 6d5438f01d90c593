"""Each shipped kernel's folder (kernels/hopper/NAME/) holds the kernel, a README that maps it and a RESULTS.md
whose every row names the commit that shipped a version and the judgement of exactly that file: the file at
the commit has the sha256 the row's JSON records, judged on the row's card on the row's date, with the
row's numbers. The attention kernel's generated wgmma wrappers are what gen_wgmma.py writes."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOPPER = ROOT / "kernels" / "hopper"
ARCHIVE = "d77e3c4"  # the last commit holding every recorded judgement under evals/results/
ROW = re.compile(r"^\| (v\d+) \| `([0-9a-f]{7,})` \| (\d{4}-\d\d-\d\d) \| (H100|H200) \| (\d+)/(\d+), ([\d.]+)x[^|]*\| "
                 r"([^|]*)\| `([^`]+)` \|$", re.MULTILINE)


def git(*args: str) -> bytes | None:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True)
    return done.stdout if done.returncode == 0 else None


needs_history = pytest.mark.skipif(shutil.which("git") is None or git("cat-file", "-e", f"{ARCHIVE}^{{commit}}") is None,
                                   reason="needs the git history")


@pytest.mark.parametrize("name", ["flash_attn_fwd", "add_rmsnorm"])
def test_a_kernel_folder_holds_the_kernel_its_map_and_its_results(name):
    folder = HOPPER / name
    assert (folder / f"{name}.cu").is_file()
    readme, results = (folder / "README.md").read_text(), (folder / "RESULTS.md").read_text()
    assert f"kernels/hopper/{name}/{name}.cu" in readme and len(readme.splitlines()) <= 120
    assert len(ROW.findall(results)) >= 3


@needs_history
@pytest.mark.parametrize("name", ["flash_attn_fwd", "add_rmsnorm"])
def test_every_results_row_names_the_commit_of_exactly_the_judged_file(name):
    text = (HOPPER / name / "RESULTS.md").read_text()
    rows = ROW.findall(text)
    # a row the pattern misses would go unchecked: every version row must match it
    assert len(rows) == len(re.findall(r"^\| v\d+ \|", text, re.MULTILINE)), "a version row is not in the table's form"
    for version, commit, date, card, correct, total, speedup, holdout, json_name in rows:
        kernel = git("show", f"{commit}:kernels/hopper/{name}/{name}.cu") or git("show", f"{commit}:kernels/hopper/{name}.cu")
        assert kernel, f"{version}: {commit} holds no {name}.cu"
        raw = (ROOT / json_name).read_bytes() if json_name.startswith("benchmarks/") else \
            git("show", f"{ARCHIVE}:evals/results/{json_name}")
        assert raw, f"{version}: {json_name} is neither under benchmarks/results/ nor at {ARCHIVE}"
        if json_name.endswith(".gz"):
            raw = gzip.decompress(raw)
        report = json.loads(raw)
        assert report["sha256"] == hashlib.sha256(kernel).hexdigest(), f"{version}: {commit} is not the judged file"
        assert report["created"].startswith(date) and card in report["device"]["name"], version
        suite = [s for s in report["scenarios"] if not s.get("holdout")]
        assert (int(correct), int(total)) == (sum(bool(s["correct"]) for s in suite), len(suite)), version
        if report["speedup"] is not None:
            assert f"{report['speedup']:.3f}" == speedup, version
        if report.get("holdout") and report["holdout"].get("speedup"):
            assert f"{report['holdout']['speedup']:.3f}x" in holdout, version


def test_the_generated_wgmma_block_is_what_the_generator_writes():
    folder = HOPPER / "flash_attn_fwd"
    source = (folder / "flash_attn_fwd.cu").read_text()
    begin = source.index("// ---- GEN BEGIN (kernels/hopper/flash_attn_fwd/gen_wgmma.py --ss-vt 64) ----")
    end = source.index("\n", source.index("// ---- GEN END", begin)) + 1
    written = subprocess.run([sys.executable, str(folder / "gen_wgmma.py"), "--ss-vt", "64"], capture_output=True,
                             text=True, check=True, timeout=60).stdout
    assert written == source[begin:end]
