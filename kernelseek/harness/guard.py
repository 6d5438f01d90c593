"""The dependency guard: what a kernel may include, and what its host code may call.

A candidate's host code runs inside the process that judges it, so it is checked before anything runs:

- Includes, from the preprocessor's own view (build.py runs the target's preprocessing steps and hands
  the output here): every file it opened must lie in the CUDA toolkit's or the system's C/C++ headers,
  and must not belong to a library the task forbids (its `forbidden_libraries`, e.g. a vendor library
  that already solves the task), even where the toolkit ships it. Textually, an `#include` must name a `<header>`: no macro, no absolute
  path, no quoted local file (a kernel is one self-contained file).
- The compiled object, before it is linked (so the static CUDA runtime's own imports are not mixed in):
  every symbol it imports must be a CUDA runtime/driver entry point, nvcc's registration glue, or on a
  short allowlist of C/C++ runtime functions (memory, math, strings, stdio for messages, the C++ ABI).
  Its code must contain no raw system-call instruction, and no section may be writable and executable.
- The built library: it may link only the C/C++ and CUDA runtimes (`NEEDED`), and its stack is not executable.

What this protects: a candidate cannot call into the Python interpreter, load libraries, open files
(`/proc/self/mem` included), read the environment, start processes or make system calls by name or by
instruction, or load GPU code from a file through a driver or runtime call it imports. What it does
not: host code can still read and write any memory of the process through raw pointers, e.g. find a
function pointer by scanning memory, or jump into the middle of an instruction; and a driver entry
point fetched by name at run time (`cudaGetDriverEntryPoint`, which kernels need for TMA descriptors)
is not seen here, so a driver call that loads a module from a file is refused only when imported.
The harness's other layers narrow what such code could gain (docs/design.md, "The judge, sealed"):
- verdicts: the candidate runs in a host process that holds only memory the checker allocated and
  maps too; the checker, which never loads the library, computes every reference, guard band and
  error from that memory itself. Rewriting the host's memory cannot make a wrong output pass.
- the channel: before the library loads, the host's socket is sealed by a seccomp filter (seal.py)
  against every write-like call, so stdio on any `FILE`, whatever descriptor it is pointed at,
  delivers nothing; the host holds no descriptor of the parent's pipe or of the shared memory.
- skipped work: inputs change and outputs are poisoned around every timed call, two timed calls per
  scenario are checked on the checker's own values, repeated calls must write (host.py).
- times: each is a claim; one below the memory or compute floor fails (floors.py). After every timed
  replay the host waits for the whole device, not the timed stream alone: a kernel a launcher leaves
  running on a stream of its own (fed by a trigger in the timed graph) either shows as work outliving
  the timed call, which fails the scenario, or has to end before the next replay, after which nothing
  can start it again (graph replays run no host code, and the guard allows no thread).
What an attacker would still need: code that rewrites the host interpreter's own objects through raw
pointers (found by scanning memory) could make the host report false times, within the floors, or skip
the host's own poisoning, varying and repeat checks, leaving only the checker's two checked trials as
witnesses of skipped work. Reaching the checker or the parent would need a kernel exploit past seccomp.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# What a built library may link: the C/C++ runtime and the CUDA runtime, nothing else.
ALLOWED_NEEDED = re.compile(
    r"^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[-\w]*|libcudart)\.so(\.[\d.]+)?$"
)

SYSTEM_HEADER_ROOTS = ("/usr/include", "/usr/lib/gcc")
# Libraries a task forbids, as `forbidden_patterns` makes them: (the library's name, its pattern). The harness
# itself forbids none: which libraries would do a task's work for it is the task folder's to say.
Forbidden = tuple[tuple[str, re.Pattern], ...]

# Imports an object may have. CUDA: runtime (cuda*), driver (cu*) and nvcc's registration glue.
_CUDA_SYMBOL = re.compile(r"^(cuda[A-Z]\w*|cu[A-Z]\w*|__cuda[A-Z]\w*|__fatbinwrap\w*)$")
_LIBM = ("sqrt cbrt hypot exp exp2 expm1 log log2 log10 log1p logb ilogb pow sin cos tan asin acos atan atan2 "
         "sinh cosh tanh asinh acosh atanh sincos erf erfc lgamma tgamma fabs floor ceil round lround llround "
         "trunc rint lrint llrint nearbyint fmod remainder remquo fmin fmax fdim fma ldexp frexp modf scalbn "
         "scalbln copysign nextafter nan").split()
_C_RUNTIME = {
    *(name + suffix for name in _LIBM for suffix in ("", "f", "l")),
    # memory and strings
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp", "strncmp", "strchr", "strstr", "strcpy", "strncpy",
    # stdio, for error messages on stdout/stderr (there is no way to open another stream)
    "printf", "fprintf", "puts", "fputs", "putchar", "fputc", "fwrite", "snprintf", "vsnprintf", "sprintf",
    "vprintf", "vfprintf", "fflush", "stderr", "stdout",
    # the C++ runtime and exception ABI
    "__cxa_atexit", "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort", "__cxa_pure_virtual",
    "__cxa_allocate_exception", "__cxa_free_exception", "__cxa_throw", "__cxa_begin_catch", "__cxa_end_catch",
    "__cxa_rethrow", "__gxx_personality_v0", "_Unwind_Resume", "_ZSt9terminatev",
    "__stack_chk_fail", "__dso_handle", "_GLOBAL_OFFSET_TABLE_", "__assert_fail", "abort", "atexit",
}
_CXX_RUNTIME = re.compile(
    r"^(_Z(nw|na|dl|da)\w*"  # operator new / delete, every variant
    r"|_ZSt\d+__throw_\w+"  # std::__throw_length_error and friends (what std::vector calls)
    r"|_ZTVN10__cxxabiv1\d+__\w*class_type_infoE"  # type_info vtables of polymorphic classes
    # the standard exception classes: constructors, destructors, what(), typeinfo, vtables
    r"|_Z(N|NK|TI|TV|TS)St\d+(exception|bad_alloc|bad_array_new_length|logic_error|runtime_error"
    r"|invalid_argument|out_of_range|length_error|domain_error|overflow_error|range_error|underflow_error)\w*)$"
)
# glibc's _FORTIFY_SOURCE versions of allowed functions (__memcpy_chk, __printf_chk, ...).
_FORTIFIED = re.compile(r"^__(\w+)_chk$")
# Vectorized libm (libmvec), e.g. _ZGVdN8v_expf.
_LIBMVEC = re.compile(r"^_ZGV\w+?_(\w+)$")

# Driver and runtime calls that load GPU code from a file: allowed by the cu*/cuda* rule otherwise.
_FROM_FILE = re.compile(r"^(cuModuleLoad|cuLinkAddFile|cu\w*LoadFromFile|cuda\w*LoadFromFile)(_v\d+)?$")
# Why a well-known forbidden import is forbidden, for the message.
_REASONS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"^_?Py"), "the Python interpreter is off limits"),
    (re.compile(r"^(dl(open|mopen|sym|vsym|close|info|addr|error|_iterate_phdr)|__libc_dl)"),
     "loading libraries or looking up symbols is not allowed"),
    (re.compile(r"^(open|openat|creat|fopen|fdopen|freopen|read|pread|write|pwrite|mmap|munmap|mprotect"
                r"|madvise|ioctl|fcntl)(64)?$"), "opening files or mapping memory is not allowed"),
    (re.compile(r"^(fork|vfork|clone|clone3|exec\w*|system|popen|posix_spawnp?|kill|ptrace|prctl|syscall)$"),
     "starting processes or making system calls is not allowed"),
    (_FROM_FILE,
     "loading GPU code from a file is not allowed (the kernel is the source that was judged)"),
    (re.compile(r"^(getenv|secure_getenv|environ|__environ|setenv|putenv)$"),
     "the environment is off limits (it may hold the judge's secrets, and a kernel needs no settings)"),
)
_SYSCALL_INSTRUCTION = re.compile(r"^\s*[0-9a-f]+:\s+(syscall|sysenter|int\s+\$0x80|svc\s)", re.M)


@dataclass(frozen=True)
class Violation:
    where: str  # "file:line", or the file
    message: str  # what was found and why it is not allowed
    subject: str = ""  # the header, symbol or library at fault

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def _run(command: list[str]) -> str:
    """stdout of a binutils command; a tool that fails makes the check fail closed."""
    try:
        proc = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(f"`{' '.join(command)}` could not run ({error}); install binutils.") from None
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


# --- includes --------------------------------------------------------------------------------------

def strip_comments(source: str) -> str:
    """Blank out comments (not string or character literals), keeping line numbers."""
    def blank(match: re.Match) -> str:
        text = match.group(0)
        return text if text[0] in "\"'" else re.sub(r"[^\n]", " ", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', blank, source, flags=re.S)


_INCLUDE = re.compile(r"^\s*#\s*(include|include_next|import)\b\s*(.*)$")


def check_include_lines(text: str, display: str) -> list[Violation]:
    """Textual rules: an #include names a <header>; no macro, no absolute path, no quoted local file."""
    violations = []
    for number, line in enumerate(strip_comments(text).splitlines(), 1):
        match = _INCLUDE.match(line)
        if not match:
            continue
        operand = match.group(2).strip()
        where = f"{display}:{number}"
        if operand.startswith(("<", '"')) and operand[1:2] == "/":
            violations.append(Violation(where, f"includes the absolute path {operand}; name a <header> of the "
                                        "CUDA toolkit or the C/C++ library instead", operand))
        elif operand.startswith('"'):
            violations.append(Violation(where, f"includes the local file {operand}; a kernel is one "
                                        "self-contained file", operand))
        elif not operand.startswith("<"):
            violations.append(Violation(where, f"includes through a macro ({operand or 'nothing'}); name the "
                                        "<header> itself", operand))
    return violations


@functools.cache
def header_roots(cuda_home: str | None, cxx: str | None) -> tuple[str, ...]:
    """Where headers may come from: the CUDA toolkit's include folders, the system's C/C++ headers, `cxx`'s own."""
    roots = list(SYSTEM_HEADER_ROOTS)
    if cuda_home:
        home = Path(cuda_home)
        roots += [str(home / "include"), *glob.glob(str(home / "targets" / "*" / "include"))]
    if cxx:
        try:
            own = subprocess.run([cxx, "-print-file-name=include"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            own = ""
        if os.path.isabs(own):
            roots.append(own)
    return tuple(sorted({os.path.realpath(r) for r in roots}))


_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d+)*)$')


def _unescape(name: str) -> str:
    return re.sub(r"\\([0-7]{1,3}|.)", lambda m: chr(int(m.group(1), 8)) if m.group(1).isdigit()
                  else m.group(1), name)


def opened_headers(preprocessed: str, candidate: str) -> dict[str, int | None]:
    """Every file the preprocessor entered, with the candidate's line whose #include pulled it in.

    Reads the `# LINE "file" FLAGS` markers of `-E` output: flag 1 enters a file, 2 returns to one.
    Files entered from outside the candidate (the compiler's forced includes) map to None.
    """
    opened: dict[str, int | None] = {}
    current, line, depth, culprit = "", 0, 0, None
    for text in preprocessed.splitlines():
        match = _MARKER.match(text) if text.startswith("# ") else None
        if not match:
            line += 1
            continue
        number, name, flags = int(match.group(1)), _unescape(match.group(2)), match.group(3).split()
        if "1" in flags:
            if depth == 0:
                culprit = line if current == candidate else None
            depth += 1
            if name != candidate and not name.startswith("<"):
                opened.setdefault(name, culprit)
        elif "2" in flags:
            depth = max(depth - 1, 0)
        current, line = name, number
    return opened


def check_headers(preprocessed: str, candidate: str, display: str, roots: tuple[str, ...],
                  forbidden: Forbidden = ()) -> list[Violation]:
    """Every header the preprocessor opened must lie under `roots` and not belong to a `forbidden` library."""
    violations = []
    for header, line in opened_headers(preprocessed, candidate).items():
        where = display if line is None else f"{display}:{line}"
        real = os.path.realpath(header)
        if banned := forbidden_library(real, forbidden):
            violations.append(Violation(where, f"pulls in {header} ({banned} is not allowed)", header))
        elif not any(real == root or real.startswith(root + os.sep) for root in roots):
            violations.append(Violation(where, f"pulls in {header} (only the CUDA toolkit's and the system's "
                                        "C/C++ headers are allowed)", header))
    return violations


def forbidden_patterns(libraries: Mapping[str, str] | None) -> Forbidden:
    """A task's `forbidden_libraries` (the library's name -> a regular expression that a folder or file name
    on its headers' paths matches whole, in any case, up to its first dot) made ready for the checks; None
    or {} forbids nothing. A pattern that is not a regular expression raises re.error."""
    return tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in sorted((libraries or {}).items()))


def forbidden_library(path: str, forbidden: Forbidden) -> str | None:
    """The forbidden library a header path belongs to, by any of its components."""
    return next((name for part in Path(path).parts for name, pattern in forbidden
                 if pattern.fullmatch(part.split(".")[0])), None)


_MISSING = re.compile(r"^(.*?):(\d+):(?:\d+:)? fatal error: (.+?): No such file or directory", re.M)


def check_missing_headers(errors: str, candidate: str, display: str, forbidden: Forbidden = ()) -> list[Violation]:
    """Forbidden headers the preprocessor could not find (the library is not installed here)."""
    violations = []
    for file, line, header in _MISSING.findall(errors):
        if (banned := forbidden_library(header, forbidden)) and file == candidate:
            violations.append(Violation(f"{display}:{line}", f"includes {header} ({banned} is not allowed)", header))
    return violations


# --- the object ------------------------------------------------------------------------------------

def allowed_import(symbol: str) -> bool:
    if _FROM_FILE.match(symbol):
        return False
    if symbol in _C_RUNTIME or _CUDA_SYMBOL.match(symbol) or _CXX_RUNTIME.match(symbol):
        return True
    if (m := _FORTIFIED.match(symbol)) and m.group(1) in _C_RUNTIME:
        return True
    return bool((m := _LIBMVEC.match(symbol)) and m.group(1) in _C_RUNTIME)


def imported_symbols(obj: str | Path, *, demangle: bool = False) -> list[str]:
    out = _run(["nm", "-u", *(["-C"] if demangle else []), str(obj)])
    return [line.split(None, 1)[1].split("@")[0] if demangle else line.split()[-1].split("@")[0]
            for line in out.splitlines() if line.strip()]


def check_object(obj: str | Path, display: str) -> list[Violation]:
    """The compiled candidate's imports, raw system calls and writable code, before it is linked."""
    names = imported_symbols(obj)
    bad = [i for i, name in enumerate(names) if not allowed_import(name)]
    shown = imported_symbols(obj, demangle=True) if bad else []
    violations = []
    for i in bad:
        name = names[i]
        why = next((why for pattern, why in _REASONS if pattern.search(name)),
                   "only the CUDA runtime/driver and a short list of C/C++ runtime functions may be called")
        label = shown[i] if len(shown) == len(names) else name
        violations.append(Violation(display, f"the host code uses {label} ({why})", name))
    function = ""
    for text in _run(["objdump", "-d", "--no-show-raw-insn", str(obj)]).splitlines():
        if m := re.match(r"^[0-9a-f]+ <(.+)>:$", text):
            function = m.group(1)
        elif _SYSCALL_INSTRUCTION.match(text):
            instruction = text.split(":", 1)[1].split()[0]
            violations.append(Violation(display, f"the host code makes a raw system call ({instruction} in "
                                        f"{function or 'its code'}); system calls are not allowed", instruction))
    for m in re.finditer(r"\]\s+(\S+)\s+\w+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+(\w*)",
                         _run(["readelf", "-SW", str(obj)])):
        if "W" in m.group(2) and "X" in m.group(2):
            violations.append(Violation(display, f"has a writable, executable section {m.group(1)} "
                                        "(code may not be written at run time)", m.group(1)))
    return violations


# --- the library -----------------------------------------------------------------------------------

def needed_libraries(library: str | Path) -> list[str]:
    try:
        out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def check_library(library: str | Path) -> list[Violation]:
    violations = [Violation(str(library), f"links {name}, a library other than the CUDA and C/C++ runtimes", name)
                  for name in needed_libraries(library) if not ALLOWED_NEEDED.match(name)]
    if re.search(r"GNU_STACK(\s+\S+){5}\s+RWE", _run(["readelf", "-lW", str(library)])):
        violations.append(Violation(str(library), "asks for an executable stack, which is not allowed", "GNU_STACK"))
    return violations


def exported_symbols(library: str | Path) -> set[str]:
    out = _run(["nm", "-D", "--defined-only", str(library)])
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if len(line.split()) >= 3}
