"""Read compute-sanitizer's text output (what `--log-file` holds) into findings and a summary.

Every line of the tool starts with its prefix (`=========`). A report starts with a line right after
the prefix (one space) and goes on with indented lines until the next report, a bare prefix line or a
summary line. The shapes handled, from the Compute Sanitizer documentation and recorded runs:

    ========= Invalid __shared__ read of size 4 bytes                       (memcheck)
    =========     at _Z10ks_oob_readPfi+0x1d0 in fault_smem_oob.cu:12
    =========     by thread (31,0,0) in block (0,0,0)
    =========     Address 0x464 is out of bounds
    ========= Error: Race reported between Write access at K+0x90 in f.cu:41  (racecheck, analysis mode)
    =========     and Read access at K+0x100 in f.cu:51 [508 hazards]
    ========= Uninitialized __global__ memory read of size 4 bytes           (initcheck)
    ========= Barrier error detected. Divergent thread(s) in warp             (synccheck)
    ========= Program hit cudaErrorInvalidValue (error 1) ... on CUDA API call to cudaMemcpy.
    ========= ERROR SUMMARY: 2 errors
    ========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)

Locations come in the tool's three spellings: `at K+0x90 in f.cu:41` (current), `at K():0x160 in
f.cu:6`, and `at 0x578 in /path/f.cu:120:K(...)` (older releases). The file and line exist only when the
code was built with `-lineinfo` (the harness always builds so).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

PREFIX = "========="
_SUMMARY = re.compile(r"^(?:ERROR|INITCHECK|SYNCCHECK|MEMCHECK) SUMMARY: ([\d,]+) errors?\b")
_NOT_PRINTED = re.compile(r"^ERROR SUMMARY: [\d,]+ errors? w(?:as|ere) not printed")
_RACE_SUMMARY = re.compile(r"^RACECHECK SUMMARY: ([\d,]+) hazards? displayed \(([\d,]+) errors?, ([\d,]+) warnings?\)")
_CONTINUATION = re.compile(r"^(?:at |by thread|and |Address |Access to |in |Device Frame|Host Frame|Saved host|"
                           r"Current Value|Not written|These unused|Uninitialized access at|\[)")
_WHERE = re.compile(r"\bin (?P<file>[^\s:()]+\.[A-Za-z0-9_]+):(?P<line>\d+)")
_KERNEL_NEW = re.compile(r"\bat (?P<name>.+?)(?:\+0x[0-9a-fA-F]+|:0x[0-9a-fA-F]+)(?:\s|$)")
_KERNEL_OLD = re.compile(r"\bat 0x[0-9a-fA-F]+ in (?:[^\s:]+:\d+:)?(?P<name>\S.*)$")
_FRAME = re.compile(r"^Device Frame:\s*(?P<name>.+?)(?:\+0x[0-9a-fA-F]+|:0x[0-9a-fA-F]+| \(|\s+in\s|$)")
_THREAD = re.compile(r"by thread (\([\d, ]+\)) in block (\([\d, ]+\))")
_OTHER_ACCESS = re.compile(r"^and (\w+) access at ")
_HAZARDS = re.compile(r"\[([\d,]+) hazards?\]")
_IGNORED = ("COMPUTE-SANITIZER", "CUDA-MEMCHECK", "LEAK SUMMARY")


@dataclass
class Finding:
    """One report of the tool: what (its first line), where (file:line of its first located access), in
    which kernel or device function, by which thread, and the lines that followed."""

    what: str
    where: str | None = None
    kernel: str | None = None
    thread: str | None = None
    hazards: int | None = None
    severity: str = "error"  # "warning" for racecheck's warnings
    lines: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)  # a race's other accesses: "Read access at f.cu:51"

    def functions(self) -> list[str]:
        """Every function the report names: the access's own and its device frames."""
        names = [self.kernel] if self.kernel else []
        for line in self.lines:
            if m := _FRAME.match(line):
                names.append(m.group("name").strip())
        return names

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """'Invalid __shared__ read of size 4 bytes at fault.cu:12 (by thread (31,0,0) in block (0,0,0))'"""
        text = self.what
        if self.where:
            text += f" at {self.where}"
        elif self.kernel:
            text += f" in {self.kernel}"
        for other in self.others[:3]:
            text += f" and {other}"
        if self.hazards:
            text += f" [{self.hazards} hazards]"
        if self.thread:
            text += f" (by thread {self.thread})"
        return text


@dataclass
class Log:
    """What one run of one tool printed: its findings (in order) and its summary counts."""

    findings: list[Finding]
    errors: int | None  # the summary's error count (racecheck: errors + warnings); None: no summary line
    summary: str | None  # the summary line itself


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _strip(line: str, prefix: str) -> str | None:
    """The line without the prefix, or None when the line is not the tool's (the program's own output)."""
    if not line.startswith(prefix):
        return None
    return line[len(prefix):]


def _finish(finding: Finding) -> Finding:
    texts = [finding.what, *finding.lines]
    for text in texts:
        if finding.where is None and (m := _WHERE.search(text)):
            finding.where = f"{m.group('file')}:{m.group('line')}"
        if finding.kernel is None and (m := _KERNEL_OLD.search(text) or _KERNEL_NEW.search(text)):
            name = m.group("name").strip()
            if not name.startswith("0x"):
                finding.kernel = name
        if finding.thread is None and (m := _THREAD.search(text)):
            finding.thread = f"{m.group(1)} in block {m.group(2)}"
        if m := _HAZARDS.search(text):
            finding.hazards = (finding.hazards or 0) + _number(m.group(1))
    for text in finding.lines:
        if (m := _OTHER_ACCESS.match(text)) and (where := _WHERE.search(text)):
            finding.others.append(f"{m.group(1)} access at {where.group('file')}:{where.group('line')}")
    lowered = finding.what.lower()
    if lowered.startswith("warning"):
        finding.severity = "warning"
    # the headline is the kind of report; the access's location is kept apart
    finding.what = re.split(r"\s+at\s+", finding.what, maxsplit=1)[0] if "Race reported" in finding.what \
        else finding.what
    return finding


def parse(text: str, prefix: str = PREFIX) -> Log:
    """Parse a compute-sanitizer log (any tool). Lines of the program itself (no prefix) are skipped."""
    findings: list[Finding] = []
    current: Finding | None = None
    errors: int | None = None
    summary: str | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            findings.append(_finish(current))
            current = None

    for raw in text.splitlines():
        rest = _strip(raw.rstrip(), prefix)
        if rest is None:
            continue
        content = rest.strip()
        if not content:
            close()
            continue
        if m := _RACE_SUMMARY.match(content):
            close()
            errors, summary = _number(m.group(2)) + _number(m.group(3)), content
            continue
        if _NOT_PRINTED.match(content):
            continue
        if m := _SUMMARY.match(content):
            close()
            errors, summary = _number(m.group(1)), content
            continue
        if content.startswith(_IGNORED):
            close()
            continue
        indented = rest.startswith("  ")
        if current is not None and (indented or _CONTINUATION.match(content)):
            current.lines.append(content)
            continue
        close()
        current = Finding(what=content)
    close()
    return Log(findings=findings, errors=errors, summary=summary)


def demangle(names: list[str]) -> dict[str, str]:
    """Readable names for mangled ones, through c++filt where it is installed (else unchanged)."""
    import shutil
    import subprocess

    tool = shutil.which("c++filt")
    wanted = [n for n in dict.fromkeys(names) if n.startswith("_Z")]
    if not tool or not wanted:
        return {}
    try:
        out = subprocess.run([tool], input="\n".join(wanted), capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    readable = out.splitlines()
    return dict(zip(wanted, readable, strict=False)) if len(readable) == len(wanted) else {}
