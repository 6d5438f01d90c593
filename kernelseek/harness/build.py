"""Build a kernel file into a shared library for a target, cached by content.

Targets: `sm90` (nvcc, sm_90a), `sm100` (nvcc, sm_100a), `cpu` (the system C++ compiler). The
cache key is the source, the flags and the compiler's version, so an edit always rebuilds and an
unchanged file never does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernelseek.harness import guard

TARGETS: dict[str, dict] = {
    "sm90": {"compiler": "nvcc", "suffix": ".cu",
             "flags": ["-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-shared",
                       "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-lineinfo"]},
    "sm100": {"compiler": "nvcc", "suffix": ".cu",
              "flags": ["-gencode=arch=compute_100a,code=sm_100a", "-O3", "-std=c++17", "-shared",
                        "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-lineinfo"]},
    "cpu": {"compiler": "c++", "suffix": ".cpp",
            "flags": ["-O3", "-march=native", "-std=c++17", "-shared", "-fPIC"]},
}


class BuildError(RuntimeError):
    """The kernel did not build or broke the guard; the message says why, with the compiler's words."""


@dataclass
class BuildResult:
    library: str
    arch: str
    sha256: str
    cached: bool
    command: list[str]
    resources: list[dict] = field(default_factory=list)  # per kernel: registers, smem, spills, ...
    log: str = ""

    @property
    def spills(self) -> int:
        return sum(r.get("spill_stores", 0) + r.get("spill_loads", 0) for r in self.resources)

    def to_dict(self) -> dict:
        return {**asdict(self), "spills": self.spills}


def cache_root() -> Path:
    return Path(os.environ.get("KERNELSEEK_CACHE", Path.home() / ".cache" / "kernelseek")) / "build"


def find_compiler(arch: str) -> str:
    name = TARGETS[arch]["compiler"]
    if name == "nvcc":
        for candidate in (shutil.which("nvcc"), os.environ.get("CUDA_HOME", "") + "/bin/nvcc",
                          "/usr/local/cuda/bin/nvcc"):
            if candidate and Path(candidate).is_file():
                return candidate
        raise BuildError("nvcc was not found; install the CUDA toolkit or put its bin/ on PATH.")
    compiler = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if not compiler:
        raise BuildError("no C++ compiler was found; install g++ or set CXX.")
    return compiler


def _compiler_version(compiler: str) -> str:
    try:
        return subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return compiler


_FUNCTION = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_USAGE = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(log: str) -> list[dict]:
    """Registers, shared memory, stack frame and spills per kernel from `ptxas -v`."""
    kernels: list[dict] = []
    current: dict | None = None
    for line in log.splitlines():
        if m := _FUNCTION.search(line):
            current = {"kernel": m.group(1), "target": m.group(2), "registers": None, "smem_bytes": 0,
                       "stack_frame": 0, "spill_stores": 0, "spill_loads": 0}
            kernels.append(current)
        elif current is not None and (m := _FRAME.search(line)):
            current.update(stack_frame=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif current is not None and (m := _USAGE.search(line)):
            current.update(registers=int(m.group(1)), smem_bytes=int(m.group(3) or 0))
    return kernels


def build_kernel(source: str | Path, arch: str, *, cache_dir: Path | None = None) -> BuildResult:
    """Guard and build `source` for `arch`; raise BuildError with the reason when it cannot be used."""
    source = Path(source)
    if arch not in TARGETS:
        raise ValueError(f"unknown arch '{arch}'; use one of {', '.join(TARGETS)}.")
    if not source.is_file():
        raise BuildError(f"{source}: no such kernel file.")
    violations = guard.check_source(source)
    if violations:
        raise BuildError("guard: " + "; ".join(map(str, violations)))
    target = TARGETS[arch]
    compiler = find_compiler(arch)
    text = source.read_bytes()
    key = hashlib.sha256(text + json.dumps(target["flags"]).encode() + _compiler_version(compiler).encode())
    digest = key.hexdigest()[:24]
    folder = (cache_dir or cache_root()) / f"{arch}-{digest}"
    library = folder / "kernel.so"
    meta_file = folder / "build.json"
    source_sha = hashlib.sha256(text).hexdigest()
    if library.is_file() and meta_file.is_file():
        meta = json.loads(meta_file.read_text())
        return BuildResult(**{**meta, "cached": True})
    folder.mkdir(parents=True, exist_ok=True)
    # The compiler sees a copy named for the target, so a .cu built for the CPU task fails clearly.
    # Private names for this build, so two processes building the same file at once cannot collide;
    # the finished library is then moved into place atomically.
    staged = folder / f"kernel.{os.getpid()}{target['suffix']}"
    staged.write_bytes(text)
    partial = folder / f"kernel.so.partial.{os.getpid()}"
    command = [compiler, *target["flags"], "-o", str(partial), str(staged)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=folder)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{source}: the compiler ran for more than 600 s and was stopped.") from None
    log = (proc.stdout + proc.stderr).replace(str(staged), str(source))
    if proc.returncode != 0:
        raise BuildError(f"{source}: compilation failed:\n{_errors_first(log)}")
    violations = guard.check_library(partial)
    if violations:
        raise BuildError("guard: " + "; ".join(map(str, violations)))
    partial.replace(library)  # atomic: a crash mid-build never leaves a half-written library in the cache
    staged.unlink(missing_ok=True)
    result = BuildResult(library=str(library), arch=arch, sha256=source_sha, cached=False,
                         command=command, resources=parse_ptxas(log), log=log[-20000:])
    meta_partial = folder / f"build.json.{os.getpid()}"
    meta_partial.write_text(json.dumps({k: v for k, v in asdict(result).items() if k != "cached"}))
    meta_partial.replace(meta_file)
    return result


def _errors_first(log: str, limit: int = 4000) -> str:
    lines = log.splitlines()
    errors = [line for line in lines if "error" in line.lower()]
    return "\n".join(errors or lines)[:limit]
