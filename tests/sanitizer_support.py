"""A stubbed sanitizer verdict source for tests without a GPU: compute-sanitizer's recorded outputs
(tests/fixtures/sanitizer/) stand in for its runs, and everything after them is the real code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelseek.harness.sanitize import FINDINGS_EXIT, TOOLS, Completed, SanitizerReport, verdict
from kernelseek.harness.sanitizer_log import parse

RECORDED = Path(__file__).resolve().parent / "fixtures" / "sanitizer"


class RecordedSource:
    """For `sanitize(..., source=...)`: each tool's run copies a recorded log where the tool would have
    written it (default `<tool>-clean.log`) and records that the child ran every scenario cleanly."""

    version = "recorded outputs (tests/fixtures/sanitizer)"

    def __init__(self, logs: dict[str, str] | None = None, timed_out: tuple[str, ...] = ()):
        self.logs, self.timed_out = logs or {}, timed_out
        self.commands: dict[str, list[str]] = {}

    def run(self, tool: str, command: list[str], log_path: Path, timeout_s: float, env: dict) -> Completed:
        self.commands[tool] = command
        spec = json.loads(Path(command[-1]).read_text())
        with open(spec["results"], "w") as results:
            for scenario in spec["scenarios"]:
                results.write(json.dumps({"scenario": scenario["name"], "status": 0, "unwritten": 0}) + "\n")
        text = (RECORDED / self.logs.get(tool, f"{tool}-clean.log")).read_text()
        shutil.copyfile(RECORDED / self.logs.get(tool, f"{tool}-clean.log"), log_path)
        if tool in self.timed_out:
            return Completed(None, True)
        return Completed(FINDINGS_EXIT if parse(text).errors else 0, False)


def recorded_report(kernel: str, logs: dict[str, str], *, kernels: list[str], scenarios: list[str]) -> SanitizerReport:
    """The report the gate would make from these recorded logs, through the real verdict code."""
    report = SanitizerReport(kernel=kernel, arch="sm90", scenarios=scenarios, tools={}, sanitizer=RecordedSource.version)
    for tool in TOOLS:
        text = (RECORDED / logs.get(tool, f"{tool}-clean.log")).read_text()
        results = [{"scenario": name, "status": 0, "unwritten": 0} for name in scenarios]
        report.tools[tool] = verdict(tool, text, kernels=kernels, display=Path(kernel).name,
                                     completed=Completed(0, False), results=results, expected=scenarios,
                                     timeout_s=300, wall_s=1.0)
    return report
