"""The child that compute-sanitizer watches: the candidate called once per sanitizer scenario.

`python -m kernelseek.harness.sanitize_child SPEC.json` loads the task and the candidate's library,
then for each scenario makes fresh inputs and NaN-poisoned outputs, calls the entry point, waits for
the GPU and appends one JSON line to the spec's results file: the scenario, the entry point's status,
how many output elements are still NaN, and the seconds it took. A Python error (a CUDA error after a
tool ended a kernel, say) is recorded and ends the child, since the context may be gone. It exits 0
whenever it could record, so that compute-sanitizer's exit status speaks of the tool's findings
alone; the sanitizer module reads the values, the tool's log says whether the accesses were safe.
"""

from __future__ import annotations

import ctypes
import json
import sys
import time
from pathlib import Path

import torch

from kernelseek.harness.task import Scenario, load_task


def _nan_count(outputs: dict) -> int:
    return sum(int(torch.isnan(t).sum()) for t in outputs.values()
               if isinstance(t, torch.Tensor) and t.is_floating_point())


def _append(path: str, record: dict) -> None:
    """Open, write, close: the results file is open only while harness code runs, so the candidate, whose
    stdio could write to any open descriptor, never finds it open on its own calls."""
    with open(path, "a", encoding="utf-8") as results:
        results.write(json.dumps(record) + "\n")


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    task = load_task(spec["task"])
    device = "cuda" if spec["arch"] != "cpu" else "cpu"
    call = task.bind(ctypes.CDLL(spec["library"]))
    for entry in spec["scenarios"]:
        scenario = Scenario(**entry)
        started = time.perf_counter()
        record: dict = {"scenario": scenario.name}
        try:
            inputs = task.make_inputs(scenario, spec["seed"], device)
            outputs = task.new_outputs(scenario, inputs, device)
            stream = torch.cuda.current_stream().cuda_stream if device == "cuda" else 0
            if device == "cuda":
                torch.cuda.synchronize()
            record["status"] = int(call(scenario, inputs, outputs, stream))
            if device == "cuda":
                torch.cuda.synchronize()
            record["unwritten"] = _nan_count(outputs)
        except Exception as error:  # noqa: BLE001 - recorded; the context may be unusable after it
            record["error"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        record["wall_s"] = round(time.perf_counter() - started, 3)
        _append(spec["results"], record)
        if "error" in record:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
