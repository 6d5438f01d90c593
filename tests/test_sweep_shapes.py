"""benchmarks/sweep_shapes.py reads a shape from its compact spelling, and refuses a misspelt one with
one sentence that shows the spelling, before it builds anything or needs a GPU."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "sweep_shapes.py"


def load():
    spec = importlib.util.spec_from_file_location("sweep_shapes", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_shape_is_read_field_by_field():
    p = load().parse("d128:h40/8:b11:q719:k720:causal").params
    assert (p["head_dim"], p["heads_q"], p["heads_kv"], p["batch"], p["seqlen_q"], p["seqlen_k"]) == (128, 40, 8, 11, 719, 720)
    assert p["causal"] is True and p["layout"] == "contiguous"
    assert load().parse("d64:h16/16:b2:q1:k4096").params["causal"] is False


def test_a_misspelt_shape_is_refused_in_one_sentence():
    for bad in ("d128:h40:b11:q719:k719", "d128:h40/8:b11:q719", "d128:h40/8:b11:q719:k719:causl"):
        run = subprocess.run([sys.executable, str(SCRIPT), "k.cu", "sm90", bad], capture_output=True, text=True)
        assert run.returncode != 0
        assert f"cannot read shape {bad!r}" in run.stderr and "Traceback" not in run.stderr
