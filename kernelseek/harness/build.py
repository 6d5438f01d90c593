"""Build a kernel file into a shared library for a target, cached by content.

Targets: `sm90` (nvcc, sm_90a), `sm100` (nvcc, sm_100a), `cpu` (the system C++ compiler). Before
anything is compiled the includes are guarded (guard.py); the candidate is then compiled to an object,
whose imports are guarded, and linked into the library. The cache key is the source, the flags, the
compiler's version and the libraries the task forbids, so an edit (or a change of that list) always
rebuilds; a cache entry is used only when its record parses, the recorded sizes and SHA-256s match its
files and they pass the guard again, else it is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernelseek.harness import guard

# `flags` compile the candidate to an object, which the guard checks before `link` makes the library.
_NVCC_FLAGS = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-lineinfo"]
TARGETS: dict[str, dict] = {
    "sm90": {"compiler": "nvcc", "suffix": ".cu",
             "flags": ["-gencode=arch=compute_90a,code=sm_90a", *_NVCC_FLAGS],
             "link": ["-gencode=arch=compute_90a,code=sm_90a", "-shared", "-Xcompiler", "-fPIC"]},
    "sm100": {"compiler": "nvcc", "suffix": ".cu",
              "flags": ["-gencode=arch=compute_100a,code=sm_100a", *_NVCC_FLAGS],
              "link": ["-gencode=arch=compute_100a,code=sm_100a", "-shared", "-Xcompiler", "-fPIC"]},
    "cpu": {"compiler": "c++", "suffix": ".cpp",
            "flags": ["-O3", "-march=native", "-std=c++17", "-fPIC"],
            "link": ["-shared", "-fPIC"]},
}
MAX_SOURCE_BYTES = 4 * 1024 * 1024


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

    @property
    def advisories(self) -> list[str]:
        """ptxas's "Potential Performance Loss" notes, "kernel: (code) what", one per kernel and note."""
        return [f"{r['kernel']}: {note}" for r in self.resources for note in r.get("advisories", [])]

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
# e.g. "(C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient
# register resources for the wgmma pipeline in the function '...'": ptxas prints these before the
# per-function lines, so they are matched to their kernel by name
_ADVISORY = re.compile(r"\((C\d+)\) Potential Performance Loss: (.+?) in the function '([^']+)'")


def parse_ptxas(log: str) -> list[dict]:
    """Registers, shared memory, stack frame, spills and performance advisories per kernel from `ptxas -v`."""
    kernels: list[dict] = []
    current: dict | None = None
    for line in log.splitlines():
        if m := _FUNCTION.search(line):
            current = {"kernel": m.group(1), "target": m.group(2), "registers": None, "smem_bytes": 0,
                       "stack_frame": 0, "spill_stores": 0, "spill_loads": 0, "advisories": []}
            kernels.append(current)
        elif current is not None and (m := _FRAME.search(line)):
            current.update(stack_frame=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif current is not None and (m := _USAGE.search(line)):
            current.update(registers=int(m.group(1)), smem_bytes=int(m.group(3) or 0))
    for m in _ADVISORY.finditer(log):
        for kernel in kernels:
            if kernel["kernel"] == m.group(3):
                kernel["advisories"].append(f"({m.group(1)}) {m.group(2)}")
    return kernels


def build_kernel(source: str | Path, arch: str, *, entry_point: str | None = None,
                 forbidden_libraries: Mapping[str, str] | None = None, cache_dir: Path | None = None) -> BuildResult:
    """Guard and build `source` for `arch`; raise BuildError with the reason when it cannot be used.

    `entry_point`, when given, must be exported by the library (checked on cache hits too).
    `forbidden_libraries` is the task's (`Task.forbidden_libraries`): headers of those libraries are refused.
    """
    source = Path(source)
    if arch not in TARGETS:
        raise ValueError(f"unknown arch '{arch}'; use one of {', '.join(TARGETS)}.")
    text = _read_source(source)
    target = TARGETS[arch]
    compiler = find_compiler(arch)
    try:
        forbidden = guard.forbidden_patterns(forbidden_libraries)
    except re.error as error:
        raise BuildError(f"forbidden_libraries: a pattern is not a regular expression ({error}); fix the task's "
                         "list.") from None
    _guard_includes(source, text, arch, compiler, forbidden)
    flags = json.dumps([target["flags"], target["link"], sorted((forbidden_libraries or {}).items())])
    key = hashlib.sha256(text + flags.encode() + _compiler_version(compiler).encode())
    folder = (cache_dir or cache_root()) / f"{arch}-{key.hexdigest()[:24]}"
    source_sha = hashlib.sha256(text).hexdigest()
    result = _cache_hit(folder, source, source_sha) or _build(folder, source, text, source_sha, arch, compiler)
    if entry_point:
        try:
            exported = guard.exported_symbols(result.library)
        except RuntimeError as error:
            raise BuildError(f"{source}: {error}") from None
        if entry_point not in exported:
            raise BuildError(f"{source}: the library does not export {entry_point} (the task's entry point); "
                             'define it as extern "C".')
    return result


def _read_source(source: Path) -> bytes:
    if not source.is_file():
        raise BuildError(f"{source}: no such kernel file.")
    with source.open("rb") as handle:
        text = handle.read(MAX_SOURCE_BYTES + 1)  # never more, however large the file is
    if len(text) > MAX_SOURCE_BYTES:
        raise BuildError(f"{source}: the file is over {MAX_SOURCE_BYTES // 2**20} MB; a kernel is one "
                         "hand-written source file, keep it under that.")
    return text


def _run_tool(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        # errors="replace": a candidate's non-UTF-8 bytes, echoed in the log, must not break the build
        return subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=600, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise BuildError(f"`{Path(command[0]).name}` ran for more than 600 s and was stopped.") from None
    except OSError as error:
        raise BuildError(f"`{command[0]}` could not run: {error}") from None


def _preprocess_commands(arch: str, compiler: str, staged: Path) -> tuple[list[list[str]], str | None]:
    """The target's own preprocessing steps for `staged` (writing to stdout), and the CUDA toolkit's folder.

    nvcc preprocesses twice, for the device and for the host, with different macros: its `-dryrun`
    lists both steps exactly as the real compile runs them, and the toolkit it belongs to (`TOP`, which
    a wrapper script on PATH would hide).
    """
    target = TARGETS[arch]
    if target["compiler"] != "nvcc":
        return [[compiler, *target["flags"], "-E", str(staged)]], None
    dry = _run_tool([compiler, "-dryrun", *target["flags"], "-c", str(staged), "-o", str(staged) + ".o"],
                    cwd=staged.parent)
    commands, top = [], None
    for line in dry.stderr.splitlines():
        if line.startswith("#$ TOP="):
            top = os.path.realpath(line[len("#$ TOP="):].strip())
        elif line.startswith("#$ ") and str(staged) in line:
            words = shlex.split(line[3:])
            if "-E" in words and str(staged) in words:
                if "-o" in words:
                    at = words.index("-o")
                    del words[at:at + 2]
                commands.append(words)
    if not commands or not top:
        raise BuildError(f"`{compiler} -dryrun` did not list its preprocessing steps and toolkit, so the includes "
                         "cannot be checked.")
    return commands, top


def _guard_includes(source: Path, text: bytes, arch: str, compiler: str, forbidden: guard.Forbidden) -> None:
    """Check every #include, textually and from the preprocessor's own list of opened files."""
    display = str(source)
    violations = guard.check_include_lines(text.decode("utf-8", errors="replace"), display)
    with tempfile.TemporaryDirectory(prefix="kernelseek-pp-") as tmp:
        staged = Path(tmp) / f"kernel{TARGETS[arch]['suffix']}"
        staged.write_bytes(text)
        commands, cuda_home = _preprocess_commands(arch, compiler, staged)
        with ThreadPoolExecutor(len(commands)) as pool:
            runs = list(pool.map(lambda command: _run_tool(command, cwd=staged.parent), commands))
    failed = next((run for run in runs if run.returncode != 0), None)
    if failed is not None:
        # a forbidden header is refused by name whether or not it is installed here
        violations += guard.check_missing_headers(failed.stderr, str(staged), display, forbidden)
        if not violations:
            raise BuildError(f"{source}: compilation failed:\n"
                             f"{_errors_first(failed.stderr.replace(str(staged), display))}")
    roots = guard.header_roots(cuda_home, _host_compiler())
    for run in runs:
        violations += guard.check_headers(run.stdout, str(staged), display, roots, forbidden)
    if violations:
        raise BuildError("guard: " + "; ".join(dict.fromkeys(map(str, violations))))


def _host_compiler() -> str | None:
    try:
        return find_compiler("cpu")
    except BuildError:
        return None


def _digest(path: Path) -> dict:
    data = path.read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _cache_hit(folder: Path, source: Path, source_sha: str) -> BuildResult | None:
    """The cached build, if its record parses, its files match the record and they pass the guard again."""
    try:
        meta = json.loads((folder / "build.json").read_text())
        files = meta.pop("files")
        result = BuildResult(**{**meta, "library": str(folder / "kernel.so"), "cached": True})
        if result.sha256 != source_sha or any(_digest(folder / name) != files[name] for name in FILES):
            return None
        if guard.check_object(folder / "kernel.o", str(source)) or guard.check_library(folder / "kernel.so"):
            return None  # rebuilt, and then refused with the reason
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RuntimeError):
        return None
    return result


FILES = ("kernel.o", "kernel.so")


def _build(folder: Path, source: Path, text: bytes, source_sha: str, arch: str, compiler: str) -> BuildResult:
    target = TARGETS[arch]
    folder.mkdir(parents=True, exist_ok=True)
    # The compiler sees a copy named for the target, so a .cu built for the CPU task fails clearly.
    # Private names for this build, so two processes building the same file at once cannot collide;
    # the finished files are then moved into place atomically.
    pid = os.getpid()
    staged = folder / f"kernel.{pid}{target['suffix']}"
    partial = {name: folder / f"kernel.{pid}{Path(name).suffix}" for name in FILES}
    staged.write_bytes(text)
    try:
        command = [compiler, *target["flags"], "-c", "-o", str(partial["kernel.o"]), str(staged)]
        log = _compile(command, source, staged, arch)
        try:
            violations = guard.check_object(partial["kernel.o"], str(source))
        except RuntimeError as error:
            raise BuildError(f"{source}: {error}") from None
        if violations:
            raise BuildError("guard: " + "; ".join(map(str, violations)))
        log += _compile([compiler, *target["link"], "-o", str(partial["kernel.so"]), str(partial["kernel.o"])],
                        source, staged, arch)
        try:
            violations = guard.check_library(partial["kernel.so"])
        except RuntimeError as error:
            raise BuildError(f"{source}: {error}") from None
        if violations:
            raise BuildError("guard: " + "; ".join(map(str, violations)))
        files = {name: _digest(partial[name]) for name in FILES}
        for name in FILES:  # atomic: a crash mid-build never leaves a half-written file in the cache
            partial[name].replace(folder / name)
    finally:
        for path in (staged, *partial.values()):
            path.unlink(missing_ok=True)
    result = BuildResult(library=str(folder / "kernel.so"), arch=arch, sha256=source_sha, cached=False,
                         command=command, resources=parse_ptxas(log), log=log[-20000:])
    record = {k: v for k, v in asdict(result).items() if k != "cached"}
    meta_partial = folder / f"build.json.{pid}"
    meta_partial.write_text(json.dumps({**record, "files": files}))
    meta_partial.replace(folder / "build.json")  # written last: it vouches for the files above
    return result


def _compile(command: list[str], source: Path, staged: Path, arch: str) -> str:
    proc = _run_tool(command, cwd=staged.parent)
    log = (proc.stdout + proc.stderr).replace(str(staged), str(source))
    if proc.returncode != 0:
        raise BuildError(_wrong_target(log, source, arch) or f"{source}: compilation failed:\n{_errors_first(log)}")
    return log


# ptxas's words for an instruction or feature the target lacks, e.g. "Instruction 'wgmma.fence' not supported
# on .target 'sm_100a'" or "Feature 'setmaxnreg' requires .target sm_90a": code written for another GPU.
_UNSUPPORTED = re.compile(r"(?:Instruction|Feature) '([^']+)' (?:not supported on \.target|requires \.target)")


def _wrong_target(log: str, source: Path, arch: str) -> str | None:
    """One sentence for a kernel whose code is for another architecture (instead of a page of ptxas lines
    repeating it), naming what the target lacks and the other targets to build for; None for other errors."""
    names = list(dict.fromkeys(match.split()[0] for match in _UNSUPPORTED.findall(log)))
    if not names:
        return None
    others = [a for a, t in TARGETS.items() if a != arch and t["compiler"] == TARGETS[arch]["compiler"]]
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return (f"{source} does not build for {arch}: it uses instructions that {arch} does not have ({shown}), "
            f"so it is written for another architecture; build it for {' or '.join(others) or 'its own'} instead.")


def _errors_first(log: str, limit: int = 4000) -> str:
    lines = log.splitlines()
    errors = [line for line in lines if "error" in line.lower()]
    return "\n".join(errors or lines)[:limit]
