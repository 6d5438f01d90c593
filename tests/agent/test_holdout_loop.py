"""The loop's side of the hold-out, without running a loop: the configuration, the trace schema, the
prompt's rules. (tests/agent/test_loop_scripted.py runs the loop and checks what the worker saw.)"""

from __future__ import annotations

import json

import pytest

from kernelseek.agent import prompts
from kernelseek.settings import ConfigError, Configuration
from kernelseek.trace import TraceError, TraceWriter, read_trace, validate_event

EVAL = {"seq": 0, "time": "t", "type": "evaluation", "step": 1, "key": "1:harness:1:full", "candidate": 1,
        "parent": 0, "path": "candidates/1.cu", "sha256": "0" * 64, "judgement": "full", "correct": True,
        "speedup": 0.95, "reason": None, "best": True, "report": "candidates/1.full.json"}


def test_holdout_size_defaults_by_arch_and_is_validated(tmp_path):
    kernel = tmp_path / "k.cu"
    kernel.write_text("")
    gpu = Configuration(task="t", kernel=str(kernel), arch="sm90", model="m")
    assert gpu.validate().holdout_size() == 24
    assert Configuration(task="t", kernel=str(kernel), arch="cpu", model="m").holdout_size() == 3
    assert Configuration(task="t", kernel=str(kernel), arch="sm90", model="m", holdout=0).holdout_size() == 0
    assert Configuration.from_dict({**gpu.to_dict(), "holdout": 40}).holdout_size() == 40
    assert Configuration.from_dict({k: v for k, v in gpu.to_dict().items() if k != "holdout"}).holdout is None
    for bad in (-1, 2.5, True):
        with pytest.raises(ConfigError, match="0 or more"):
            Configuration(task="t", kernel=str(kernel), model="m", holdout=bad).validate()


def test_the_trace_keeps_both_geomeans_and_validates_the_holdout(tmp_path):
    good = {**EVAL, "holdout": {"n": 24, "seed": 123, "correct": 23, "speedup": None}}
    assert validate_event(good) is None and validate_event(EVAL) is None  # optional: old traces stay valid
    assert validate_event({**good, "holdout": {**good["holdout"], "speedup": 0.81}}) is None
    bad = {"lacks the field 'seed'": {"n": 24, "correct": 24, "speedup": 1.0},
           "n 0 is not a positive": {"n": 0, "seed": 1, "correct": 0, "speedup": None},
           "seed -1": {"n": 2, "seed": -1, "correct": 2, "speedup": 1.0},
           "correct 3 is not a count between 0 and 2": {"n": 2, "seed": 1, "correct": 3, "speedup": 1.0},
           "speedup 'fast'": {"n": 2, "seed": 1, "correct": 2, "speedup": "fast"},
           "not an object": [24, 1]}
    for message, holdout in bad.items():
        problem = validate_event({**EVAL, "holdout": holdout})
        assert problem and message in problem, (message, problem)
    writer = TraceWriter(tmp_path / "trace.jsonl")
    with pytest.raises(ValueError, match="bad trace event"):
        writer.write("evaluation", step=1, key="k1",
                     **{f: EVAL[f] for f in EVAL if f not in ("seq", "time", "type", "step", "key")},
                     holdout={"n": 2, "seed": 1, "correct": 5, "speedup": 1.0})
    written = writer.write("evaluation", step=1, key="k2", **{f: good[f] for f in good
                                                               if f not in ("seq", "time", "type", "step", "key")})
    assert written and read_trace(tmp_path / "trace.jsonl")[0]["holdout"]["seed"] == 123
    line = json.loads((tmp_path / "trace.jsonl").read_text())
    line["holdout"]["correct"] = 99
    (tmp_path / "trace.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(TraceError, match="line 1: the evaluation's holdout correct 99"):
        read_trace(tmp_path / "trace.jsonl")


def test_the_prompt_states_rules_instead_of_a_promise():
    text = prompts.SYSTEM.lower()
    assert "cannot be fooled" not in text
    for rule in ("every scenario", "hold-out", "inputs must not be modified", "outside the outputs",
                 "cuda runtime and driver", "c/c++ runtime functions"):
        assert rule in text, rule
