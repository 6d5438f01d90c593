"""The README's examples that run on a CPU leave `git status` as it was: runs, statistics, reports and
caches go to the user's data directory (or wherever a flag says), never into the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "/tmp/kernelseek-readme-script.json"

# Each example as the README writes it (checked below), then how it runs here.
EXAMPLES = [
    ("kernelseek scenarios flash_attn_fwd --arch sm90", ["scenarios", "flash_attn_fwd", "--arch", "sm90"]),
    ("kernelseek run rmsnorm_cpu --model scripted//tmp/script.json --mode auto --target-gain 1.5",
     ["run", "rmsnorm_cpu", "--model", f"scripted/{SCRIPT}", "--mode", "auto", "--target-gain", "1.5",
      "--run-id", "readme", "--unconfined"]),
    ("kernelseek trace show RUN_ID", ["trace", "show", "readme"]),
    ("kernelseek bank list", ["bank", "list"]),
    ("kernelseek trace analyze", ["trace", "analyze", "{runs}"]),
    ("kernelseek report RUN_ID", ["report", "readme", "--json"]),
    ("kernelseek runs", ["runs"]),
]


NOT_DATA = ("__pycache__", ".pytest_cache/", ".ruff_cache/", ".venv/", ".egg-info/")


def _status() -> set[str]:
    """Changed, untracked and ignored paths (an ignored runs/ folder would hide a run written into the
    checkout), less Python's own caches."""
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--ignored"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return {line for line in out.splitlines() if not any(part in line for part in NOT_DATA)}


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="needs the git checkout")
def test_readme_examples_leave_git_status_as_it_was(tmp_path):
    readme = (ROOT / "README.md").read_text()
    for written, _ in EXAMPLES:
        assert written in readme, f"the README no longer shows {written!r}: update this test"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELSEEK_")}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), HOME=str(tmp_path / "home"), COLUMNS="200",
               KERNELSEEK_CACHE=str(tmp_path / "cache"))
    (tmp_path / "home").mkdir()
    script = subprocess.run([sys.executable, "-m", "kernelseek.models.scripted", "rmsnorm_cpu.cpp",
                             "tests/fixtures/loop/wrong.cpp", "tests/fixtures/loop/faster.cpp", ":done"],
                            cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    Path(SCRIPT).write_text(script)
    before = _status()
    runs = tmp_path / "data" / "kernelseek" / "runs"
    for written, args in EXAMPLES:
        args = [a.replace("{runs}", str(runs)) for a in args]
        done = subprocess.run([sys.executable, "-m", "kernelseek", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{written}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert (runs / "readme" / "trace.jsonl").is_file(), "the run did not go to the user's data directory"
    assert _status() - before == set(), "a README example wrote into the checkout"
