"""The dependency guard: a kernel may use the CUDA toolkit's own headers and the CUDA runtime only.

Checked twice: on the source before it is built (every `#include`, and any string naming a forbidden
library, which catches a `dlopen` at run time), and on the built library (its `NEEDED` entries).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Libraries and header trees a kernel must not use, by the words that name them.
FORBIDDEN_WORDS = ("cutlass", "cute", "cublas", "cublaslt", "cudnn", "thrust", "flash_attn", "flashattn",
                   "thunderkittens", "kittens")
# What a built library may link: the C/C++ runtime and the CUDA runtime, nothing else.
ALLOWED_NEEDED = re.compile(
    r"^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[-\w]*|libcudart)\.so(\.[\d.]+)?$"
)
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
_LIB_STRING = re.compile(r'"[^"\n]*lib(cublas|cudnn|cutlass|cuda)\b[^"\n]*"', re.IGNORECASE)


@dataclass(frozen=True)
class Violation:
    where: str  # "file:line" or the library file
    text: str  # the offending line or entry
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.why}: {self.text.strip()}"


def _strip_comments(source: str) -> str:
    """Blank out comments, keeping line numbers."""
    def blank(match: re.Match) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))
    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, source, flags=re.S)


def check_source(path: str | Path) -> list[Violation]:
    path = Path(path)
    violations = []
    raw_lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    code_lines = _strip_comments("\n".join(raw_lines)).splitlines()
    for number, line in enumerate(code_lines, 1):
        where = f"{path}:{number}"
        match = _INCLUDE.match(line)
        if match:
            quote, header = match.groups()
            words = re.split(r"[/_.\-]", header.lower())
            bad = [w for w in FORBIDDEN_WORDS if w in words or header.lower().startswith(w)]
            if bad:
                violations.append(Violation(where, raw_lines[number - 1], f"includes {bad[0]}, which is not allowed"))
            elif quote == '"':
                violations.append(Violation(where, raw_lines[number - 1],
                                            "includes a local header; a kernel is one self-contained file"))
        if _LIB_STRING.search(line) and "cudart" not in line:
            violations.append(Violation(where, raw_lines[number - 1], "names a library other than the CUDA runtime"))
    return violations


def needed_libraries(library: str | Path) -> list[str]:
    try:
        out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def check_library(library: str | Path) -> list[Violation]:
    return [Violation(str(library), name, "links a library other than the CUDA and C/C++ runtimes")
            for name in needed_libraries(library) if not ALLOWED_NEEDED.match(name)]
